import type { GenerateFinishReason, GenerateRequest, GenerateResult } from '@rstar/agent';
import { EngineResponseError } from './engine.errors';
import type { EngineAdapter, LoadedWeights, ModelInfo, ServerInfo } from './engine.port';
import { readEngineLoad, type EngineLoadSample } from './engine-load';
import { sglangWeightTransfer, type WeightTransfer } from './distributed-sync';
import { checkWeightTransferRoutes } from './probe.check';
import { DEFAULT_RETRY, probeHealth, requestJson, type RetryPolicy } from './http.client';

interface SglangGenerateResponse {
  text?: string;
  output_ids?: number[];
  meta_info?: {
    finish_reason?: { type?: string } | string | null;
    weight_version?: string | number | null;
    /** `[logprob, token_id, token_text|null]` per generated token. */
    output_token_logprobs?: [number | null, number, string | null][];
  };
}

/** A reported string field (numbers as their decimal text), or null when absent. */
function str(v: unknown): string | null {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null;
}

/** Map SGLang's finish reason (`{type: 'stop'|'length'|'abort'}`) to the agent's. */
function finishOf(fr: { type?: string } | string | null | undefined): GenerateFinishReason {
  const type = typeof fr === 'string' ? fr : fr?.type;
  if (type === 'length') return 'length';
  if (type === 'abort') return 'abort';
  return 'stop';
}

/**
 * SGLang's native HTTP API (also spoken by the built-in engine): `POST /generate` with `input_ids`,
 * `sampling_params` and `return_logprob`; `POST /abort_request`; `GET /get_server_info`
 * (`max_total_num_tokens` = KV-cache capacity in tokens); `POST /update_weights_from_disk` with a
 * `weight_version`; `GET /get_weight_version` and `GET /get_model_info`; `POST /flush_cache`; `GET /health`.
 * Every generation reports the engine's `weight_version`, which policy-serving checks against the policy
 * version it loaded.
 */
export class SglangAdapter implements EngineAdapter {
  readonly kind: string;

  constructor(
    readonly id: string,
    private readonly url: string,
    private readonly retry: RetryPolicy = DEFAULT_RETRY,
    kind = 'sglang',
    /** Bearer token sent with every request (the engine's `--api-key` / admin token), or null. */
    private readonly apiKey: string | null = null,
    /**
     * `colocate`: the engine shares its accelerator with the trainer, so each weight update runs inside a
     * memory release: release weights + KV cache, resume weights, load, resume the KV cache (SGLang's order).
     * `kvCapacityTokens`: KV-cache budget in tokens the scheduler plans with (a run config's
     * `engines[].kvCapacityTokens`); absent: the capacity the engine reports. The engine is still asked, so a
     * dead one stays out of rotation.
     */
    private readonly opts: { colocate?: boolean; kvCapacityTokens?: number } = {},
  ) {
    this.url = url.replace(/\/+$/, '');
    this.kind = kind;
  }

  async serverInfo(): Promise<ServerInfo> {
    const info = (await requestJson(this.id, this.url, '/get_server_info', { apiKey: this.apiKey, }, this.retry)) as Record<string, unknown> | null;
    const internal = Array.isArray(info?.internal_states) ? (info.internal_states[0] as Record<string, unknown> | undefined) : undefined;
    const cap = info?.max_total_num_tokens ?? internal?.max_total_num_tokens ?? info?.kv_capacity_tokens;
    if (typeof cap !== 'number' || !(cap > 0)) {
      throw new EngineResponseError(this.id, '/get_server_info has no positive max_total_num_tokens (the KV-cache capacity in tokens)');
    }
    return { kvCapacityTokens: this.opts.kvCapacityTokens ?? cap };
  }

  async generate(req: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    const body = {
      input_ids: req.inputIds,
      rid: req.rid,
      return_logprob: true,
      sampling_params: {
        temperature: req.sampling.temperature,
        top_p: req.sampling.topP,
        max_new_tokens: req.sampling.maxNewTokens,
        sampling_seed: req.sampling.seed,
        ...(req.sampling.stop?.length ? { stop: req.sampling.stop } : {}),
      },
    };
    const onAbort = () => void this.abort(req.rid).catch(() => undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = (await requestJson(this.id, this.url, '/generate', { apiKey: this.apiKey,  body, signal }, this.retry)) as SglangGenerateResponse | null;
      const lp = res?.meta_info?.output_token_logprobs;
      if (!res || !Array.isArray(lp)) throw new EngineResponseError(this.id, '/generate answered without meta_info.output_token_logprobs');
      const tokenIds = Array.isArray(res.output_ids) && res.output_ids.length === lp.length ? res.output_ids : lp.map((e) => e[1]);
      const wv = res.meta_info?.weight_version;
      return {
        tokenIds, logprobs: lp.map((e) => e[0] ?? 0), text: res.text ?? '', finishReason: finishOf(res.meta_info?.finish_reason),
        ...(wv === undefined || wv === null ? {} : { weightVersion: String(wv) }),
      };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async abort(rid: string): Promise<void> {
    await requestJson(this.id, this.url, '/abort_request', { apiKey: this.apiKey,  body: { rid }, expectJson: false }, { ...this.retry, attempts: 1, timeoutMs: 5000 });
  }

  /**
   * `POST /update_weights_from_disk {model_path, weight_version}`; resolves with the `weight_version` and
   * `manifest_hash` of the answer (null when absent). @throws EngineResponseError when the engine says
   * `success: false` (e.g. the reference engine refusing a checkpoint without STABLE or with another tokenizer).
   */
  async updateWeights(path: string, opts: { version?: number } = {}): Promise<LoadedWeights> {
    if (!this.opts.colocate) return this.loadFromDisk(path, opts);
    await this.releaseMemory(['weights', 'kv_cache']);
    let loaded: LoadedWeights | undefined;
    try {
      await this.resumeMemory(['weights']);
      loaded = await this.loadFromDisk(path, opts);
    } finally {
      // The KV cache comes back even when the load failed, so the engine is never left unable to serve.
      await this.resumeMemory(['kv_cache']);
    }
    return loaded;
  }

  /**
   * `POST /release_memory_occupation {tags}`: free the engine's `weights` and/or `kv_cache` (SGLang needs
   * `--enable-memory-saver`; generation is refused until resumed). @throws EngineResponseError when refused.
   */
  async releaseMemory(tags: readonly ('weights' | 'kv_cache')[]): Promise<void> {
    await this.occupation('/release_memory_occupation', tags);
  }

  /** `POST /resume_memory_occupation {tags}`: allocate the released regions again. @throws EngineResponseError when refused. */
  async resumeMemory(tags: readonly ('weights' | 'kv_cache')[]): Promise<void> {
    await this.occupation('/resume_memory_occupation', tags);
  }

  private async occupation(route: string, tags: readonly string[]): Promise<void> {
    try {
      await requestJson(this.id, this.url, route, { apiKey: this.apiKey, body: { tags }, expectJson: false }, this.retry);
    } catch (e) {
      if (e instanceof EngineResponseError) {
        throw new EngineResponseError(this.id, `${route} ${JSON.stringify(tags)} failed: ${e.message} (a colocated SGLang engine must be started with --enable-memory-saver)`);
      }
      throw e;
    }
  }

  private async loadFromDisk(path: string, opts: { version?: number }): Promise<LoadedWeights> {
    const body = { model_path: path, ...(opts.version === undefined ? {} : { weight_version: String(opts.version) }) };
    let res: { success?: boolean; message?: string; weight_version?: unknown; manifest_hash?: unknown } | null;
    try {
      res = (await requestJson(this.id, this.url, '/update_weights_from_disk', { apiKey: this.apiKey, body }, this.retry)) as typeof res;
    } catch (e) {
      // The reference engine answers a refused load with HTTP 400 and {success: false, message}.
      if (e instanceof EngineResponseError) throw new EngineResponseError(this.id, `weight update from ${path} failed: ${e.message}`);
      throw e;
    }
    if (res && res.success === false) throw new EngineResponseError(this.id, `weight update from ${path} failed: ${res.message ?? 'no message'}`);
    return { weightVersion: str(res?.weight_version), manifestHash: str(res?.manifest_hash) };
  }

  /**
   * `GET /get_weight_version` (SGLang; the reference engine adds `manifest_hash`); engines without the
   * route (the builtin engine, older SGLang) are read from `/get_server_info`.
   */
  async loadedWeights(): Promise<LoadedWeights> {
    let res: Record<string, unknown> | null;
    try {
      res = (await requestJson(this.id, this.url, '/get_weight_version', { apiKey: this.apiKey }, this.retry)) as Record<string, unknown> | null;
    } catch (e) {
      if (!(e instanceof EngineResponseError)) throw e;
      res = (await requestJson(this.id, this.url, '/get_server_info', { apiKey: this.apiKey }, this.retry)) as Record<string, unknown> | null;
    }
    return { weightVersion: str(res?.weight_version), manifestHash: str(res?.manifest_hash) };
  }

  /** `GET /get_model_info`: the served model path and, from the reference engine, the tokenizer hash. */
  async modelInfo(): Promise<ModelInfo> {
    const res = (await requestJson(this.id, this.url, '/get_model_info', { apiKey: this.apiKey }, this.retry)) as Record<string, unknown> | null;
    return { modelPath: str(res?.model_path), tokenizerHash: str(res?.tokenizer_hash) };
  }

  /** `GET /metrics`: KV tokens in use and the retraction counter (see engine-load.ts). */
  loadStats(): Promise<EngineLoadSample | null> {
    return readEngineLoad(this.id, this.url, this.apiKey, this.retry);
  }

  /** Weight transfer over torch.distributed and the probe's prompt logprobs (distributed-sync.ts). */
  weightTransfer(): WeightTransfer {
    return sglangWeightTransfer({ id: this.id, url: this.url, apiKey: this.apiKey });
  }

  /** Run start of `weightSync: distributed`: the server must serve the distributed-update routes ({@link checkWeightTransferRoutes}). */
  async checkWeightTransfer(): Promise<void> {
    await checkWeightTransferRoutes({ id: this.id, url: this.url, apiKey: this.apiKey, kind: 'sglang' });
  }

  async flushCache(): Promise<void> {
    await requestJson(this.id, this.url, '/flush_cache', { apiKey: this.apiKey,  method: 'POST', expectJson: false }, this.retry);
  }

  health(): Promise<boolean> {
    return probeHealth(this.id, this.url, this.retry, this.apiKey);
  }
}
