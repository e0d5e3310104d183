import type { GenerateFinishReason, GenerateRequest, GenerateResult } from '@rstar/agent';
import { EngineResponseError, EngineUnsupportedError } from './engine.errors';
import { resolve } from 'node:path';
import type { EngineAdapter, LoadedWeights, ModelInfo, ServerInfo } from './engine.port';
import { readEngineLoad, type EngineLoadSample } from './engine-load';
import { vllmWeightTransfer, type WeightTransfer } from './distributed-sync';
import { checkWeightTransferRoutes } from './probe.check';
import { DEFAULT_RETRY, probeHealth, requestJson, type RetryPolicy } from './http.client';

interface VllmChoice {
  text?: string;
  finish_reason?: string | null;
  token_ids?: number[];
  logprobs?: { tokens?: string[]; token_logprobs?: (number | null)[] } | null;
}

/** Options of a vLLM engine: the served model name and, when `/metrics` does not tell, the KV capacity. */
export interface VllmOptions {
  model?: string;
  kvCapacityTokens?: number;
  retry?: RetryPolicy;
  /**
   * Weight reload by restart (stock vLLM cannot load weights from disk): `updateWeights(path)` waits up to
   * this long (ms) for the server, restarted by its supervisor on `path`, to serve it (`/v1/models` root).
   * 0 (default): only check once.
   */
  reloadWaitMs?: number;
  /** Bearer token of vLLM's `--api-key`, sent with every request. */
  apiKey?: string | null;
}

/**
 * vLLM's OpenAI-compatible server: `POST /v1/completions` with a token-id prompt, `logprobs: 1`,
 * `return_tokens_as_token_ids` (tokens come back as `token_id:<n>`) and `return_token_ids`. The KV
 * capacity is `num_gpu_blocks * block_size` from the `vllm:cache_config_info` metric. Abort = closing the
 * HTTP request (vLLM aborts on disconnect); flush = `POST /reset_prefix_cache`. A stock vLLM server has
 * no weight reload from disk; the supported path is a restart on the new checkpoint (`vllm serve DIR`):
 * `updateWeights(path)` resolves once the server serves `path` (the `root` of `/v1/models`, waiting up to
 * `reloadWaitMs`) and throws {@link EngineUnsupportedError} naming the restart otherwise.
 */
export class VllmAdapter implements EngineAdapter {
  readonly kind = 'vllm';
  private model: string | undefined;
  private readonly retry: RetryPolicy;
  private readonly inflight = new Map<string, AbortController>();

  constructor(
    readonly id: string,
    private readonly url: string,
    private readonly opts: VllmOptions = {},
  ) {
    this.url = url.replace(/\/+$/, '');
    this.model = opts.model;
    this.retry = opts.retry ?? DEFAULT_RETRY;
  }

  async serverInfo(): Promise<ServerInfo> {
    if (this.opts.kvCapacityTokens) return { kvCapacityTokens: this.opts.kvCapacityTokens };
    const text = String(await requestJson(this.id, this.url, '/metrics', { apiKey: this.opts.apiKey,  expectJson: false }, this.retry));
    const line = text.split('\n').find((l) => l.startsWith('vllm:cache_config_info{'));
    const label = (name: string) => Number(line?.match(new RegExp(`${name}="(\\d+)"`))?.[1]);
    const cap = label('num_gpu_blocks') * label('block_size');
    if (!(cap > 0)) {
      throw new EngineResponseError(this.id, '/metrics has no vllm:cache_config_info with num_gpu_blocks and block_size; give the capacity as vllm=URL?kv=TOKENS');
    }
    return { kvCapacityTokens: cap };
  }

  private async modelName(): Promise<string> {
    if (this.model) return this.model;
    const res = (await requestJson(this.id, this.url, '/v1/models', { apiKey: this.opts.apiKey, }, this.retry)) as { data?: { id?: string }[] } | null;
    const id = res?.data?.[0]?.id;
    if (!id) throw new EngineResponseError(this.id, '/v1/models lists no model; give one as vllm=URL?model=NAME');
    this.model = id;
    return id;
  }

  async generate(req: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    const ac = new AbortController();
    this.inflight.set(req.rid, ac);
    const all = signal ? AbortSignal.any([signal, ac.signal]) : ac.signal;
    try {
      const body = {
        model: await this.modelName(),
        prompt: req.inputIds,
        max_tokens: req.sampling.maxNewTokens,
        temperature: req.sampling.temperature,
        top_p: req.sampling.topP,
        seed: req.sampling.seed,
        logprobs: 1,
        return_tokens_as_token_ids: true,
        return_token_ids: true,
        skip_special_tokens: false,
        ...(req.sampling.stop?.length ? { stop: req.sampling.stop } : {}),
      };
      const res = (await requestJson(this.id, this.url, '/v1/completions', { apiKey: this.opts.apiKey,  body, signal: all }, this.retry)) as { choices?: VllmChoice[] } | null;
      const c = res?.choices?.[0];
      const lps = c?.logprobs?.token_logprobs;
      if (!c || !Array.isArray(lps)) throw new EngineResponseError(this.id, '/v1/completions answered without choices[0].logprobs.token_logprobs');
      const tokenIds = Array.isArray(c.token_ids)
        ? c.token_ids
        : (c.logprobs?.tokens ?? []).map((t) => {
            const m = /^token_id:(\d+)$/.exec(t);
            if (!m) throw new EngineResponseError(this.id, `token "${t}" is not "token_id:<n>" (start vLLM >= 0.6 with return_tokens_as_token_ids)`);
            return Number(m[1]);
          });
      if (tokenIds.length !== lps.length) throw new EngineResponseError(this.id, `${tokenIds.length} token ids but ${lps.length} logprobs`);
      const fr: GenerateFinishReason = c.finish_reason === 'length' ? 'length' : c.finish_reason === 'abort' ? 'abort' : 'stop';
      return { tokenIds, logprobs: lps.map((x) => x ?? 0), text: c.text ?? '', finishReason: fr };
    } finally {
      this.inflight.delete(req.rid);
    }
  }

  async abort(rid: string): Promise<void> {
    this.inflight.get(rid)?.abort(new Error(`aborted ${rid}`));
  }

  async updateWeights(path: string): Promise<LoadedWeights> {
    const want = resolve(path);
    const deadline = Date.now() + (this.opts.reloadWaitMs ?? 0);
    for (;;) {
      const served = await this.modelInfo().then((m) => m.modelPath, () => null);
      if (served !== null && resolve(served) === want) return { weightVersion: null, manifestHash: null };
      if (Date.now() >= deadline) {
        throw new EngineUnsupportedError(
          this.id, `updateWeights(${path})`,
          `stock vLLM cannot reload weights from disk: restart it on the checkpoint (\`vllm serve ${path} --served-model-name ${this.model ?? 'NAME'}\`); it serves ${served ?? 'an unknown model'} now. Give the restart time with vllm=URL?reloadWaitMs=MS`,
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** `GET /v1/models`: the served model's path (`root`); vLLM reports no tokenizer hash. */
  async modelInfo(): Promise<ModelInfo> {
    const res = (await requestJson(this.id, this.url, '/v1/models', { apiKey: this.opts.apiKey }, this.retry)) as { data?: { id?: string; root?: string }[] } | null;
    const m = res?.data?.[0];
    return { modelPath: m?.root ?? null, tokenizerHash: null };
  }

  /** `GET /metrics`: KV usage and the preemption counter (see engine-load.ts). */
  loadStats(): Promise<EngineLoadSample | null> {
    return readEngineLoad(this.id, this.url, this.opts.apiKey ?? null, this.retry);
  }

  /** Weight transfer over vLLM's weight-transfer routes and the probe's prompt logprobs (distributed-sync.ts). */
  weightTransfer(): WeightTransfer {
    return vllmWeightTransfer({ id: this.id, url: this.url, apiKey: this.opts.apiKey ?? null }, () => this.modelName());
  }

  /** Run start of `weightSync: distributed`: the server must serve the weight-transfer routes ({@link checkWeightTransferRoutes}). */
  async checkWeightTransfer(): Promise<void> {
    await checkWeightTransferRoutes({ id: this.id, url: this.url, apiKey: this.opts.apiKey ?? null, kind: 'vllm' });
  }

  /**
   * `POST /reset_prefix_cache` where the server has it (only with `VLLM_SERVER_DEV_MODE=1`); a server answering
   * 404 is remembered and not asked again (its prefix cache is keyed by weights it cannot swap in place).
   */
  async flushCache(): Promise<void> {
    if (this.noResetRoute) return;
    try {
      await requestJson(this.id, this.url, '/reset_prefix_cache', { apiKey: this.opts.apiKey,  method: 'POST', expectJson: false }, this.retry);
    } catch (e) {
      if (e instanceof EngineResponseError && / answered HTTP 404/.test(e.message)) this.noResetRoute = true;
      else throw e;
    }
  }

  private noResetRoute = false;

  health(): Promise<boolean> {
    return probeHealth(this.id, this.url, this.retry, this.opts.apiKey ?? null);
  }
}
