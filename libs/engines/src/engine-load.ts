import { EngineResponseError } from './engine.errors';
import { requestJson, type RetryPolicy } from './http.client';

/**
 * What an engine reports about its KV cache right now, read from its Prometheus `GET /metrics`
 * (docs/design/architecture.md, scheduler). Tokens for the KV figures; counts for requests.
 */
export interface EngineLoadSample {
  /** KV-cache tokens held by running requests now. */
  kvUsedTokens: number;
  /** KV-cache capacity in tokens, when the metrics say (null: use the server info's). */
  kvCapacityTokens: number | null;
  /** Requests retracted (SGLang) or preempted (vLLM) since the engine started: a monotonic counter. */
  retractions: number;
  /** Requests waiting in the engine's own queue. */
  queuedRequests: number;
  /** Requests in the engine's running batch. */
  runningRequests: number;
}

/** Value of an unlabelled (or first labelled) sample of `name` in Prometheus text, or null when absent. */
function metric(text: string, name: string): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const value = rest[0] === '{' ? rest.slice(rest.lastIndexOf('}') + 1) : rest;
    const v = Number(value.trim().split(' ')[0]);
    if (Number.isFinite(v)) return v;
  }
  return null;
}

/**
 * Parse an engine's Prometheus text into a load sample (pure). SGLang names first: `sglang:num_used_tokens`
 * (KV tokens in use), `sglang:max_total_num_tokens`, `sglang:num_retracted_requests_total` (the retraction
 * counter of current SGLang; the older `sglang:num_retracted_reqs` gauge is reset at each publish, so it is
 * not read), `sglang:num_queue_reqs`, `sglang:num_running_reqs`. vLLM: `vllm:kv_cache_usage_perc` (or
 * `vllm:gpu_cache_usage_perc`) times the capacity from `vllm:cache_config_info`, `vllm:num_preemptions_total`,
 * `vllm:num_requests_waiting`, `vllm:num_requests_running`. Returns null when neither family reports KV
 * usage and a retraction counter (an engine that cannot be observed, e.g. the built-in engine).
 */
export function parseEngineLoad(text: string): EngineLoadSample | null {
  const used = metric(text, 'sglang:num_used_tokens');
  const retracted = metric(text, 'sglang:num_retracted_requests_total');
  if (used !== null && retracted !== null) {
    return {
      kvUsedTokens: used,
      kvCapacityTokens: metric(text, 'sglang:max_total_num_tokens'),
      retractions: retracted,
      queuedRequests: metric(text, 'sglang:num_queue_reqs') ?? 0,
      runningRequests: metric(text, 'sglang:num_running_reqs') ?? 0,
    };
  }
  const share = metric(text, 'vllm:kv_cache_usage_perc') ?? metric(text, 'vllm:gpu_cache_usage_perc');
  const preempted = metric(text, 'vllm:num_preemptions_total');
  const cfg = text.split('\n').find((l) => l.startsWith('vllm:cache_config_info{'));
  const label = (name: string) => Number(cfg?.match(new RegExp(`${name}="(\\d+)"`))?.[1]);
  const cap = label('num_gpu_blocks') * label('block_size');
  if (share !== null && preempted !== null && cap > 0) {
    return {
      kvUsedTokens: Math.round(share * cap),
      kvCapacityTokens: cap,
      retractions: preempted,
      queuedRequests: metric(text, 'vllm:num_requests_waiting') ?? 0,
      runningRequests: metric(text, 'vllm:num_requests_running') ?? 0,
    };
  }
  return null;
}

/**
 * `GET /metrics` of one engine, parsed by {@link parseEngineLoad}; null when the engine exposes no KV usage
 * and retraction counter. @throws EngineUnavailableError when it does not answer; EngineResponseError on an
 * error answer (an engine without `/metrics` answers 404: null).
 */
export async function readEngineLoad(engineId: string, url: string, apiKey: string | null, retry: RetryPolicy): Promise<EngineLoadSample | null> {
  let text: string;
  try {
    text = String(await requestJson(engineId, url, '/metrics', { apiKey, expectJson: false }, { ...retry, attempts: 1, timeoutMs: Math.min(retry.timeoutMs, 5000) }));
  } catch (e) {
    if (e instanceof EngineResponseError && /HTTP 404/.test(e.message)) return null;
    throw e;
  }
  return parseEngineLoad(text);
}
