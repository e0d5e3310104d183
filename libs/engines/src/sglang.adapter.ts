import type { GenerateFinishReason, GenerateRequest, GenerateResult } from '@rstar/agent';
import { EngineResponseError } from './engine.errors';
import type { EngineAdapter, ServerInfo } from './engine.port';
import { DEFAULT_RETRY, probeHealth, requestJson, type RetryPolicy } from './http.client';

interface SglangGenerateResponse {
  text?: string;
  output_ids?: number[];
  meta_info?: {
    finish_reason?: { type?: string } | string | null;
    /** `[logprob, token_id, token_text|null]` per generated token. */
    output_token_logprobs?: [number | null, number, string | null][];
  };
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
 * (`max_total_num_tokens` = KV-cache capacity in tokens); `POST /update_weights_from_disk`;
 * `POST /flush_cache`; `GET /health`.
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
    return { kvCapacityTokens: cap };
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
      return { tokenIds, logprobs: lp.map((e) => e[0] ?? 0), text: res.text ?? '', finishReason: finishOf(res.meta_info?.finish_reason) };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async abort(rid: string): Promise<void> {
    await requestJson(this.id, this.url, '/abort_request', { apiKey: this.apiKey,  body: { rid }, expectJson: false }, { ...this.retry, attempts: 1, timeoutMs: 5000 });
  }

  async updateWeights(path: string): Promise<void> {
    const res = (await requestJson(this.id, this.url, '/update_weights_from_disk', { apiKey: this.apiKey,  body: { model_path: path } }, this.retry)) as { success?: boolean; message?: string } | null;
    if (res && res.success === false) throw new EngineResponseError(this.id, `weight update from ${path} failed: ${res.message ?? 'no message'}`);
  }

  async flushCache(): Promise<void> {
    await requestJson(this.id, this.url, '/flush_cache', { apiKey: this.apiKey,  method: 'POST', expectJson: false }, this.retry);
  }

  health(): Promise<boolean> {
    return probeHealth(this.id, this.url, this.retry, this.apiKey);
  }
}
