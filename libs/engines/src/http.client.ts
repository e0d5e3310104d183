import { EngineContextExceededError, EngineResponseError, EngineUnavailableError, isContextExceededAnswer } from './engine.errors';

/** Retry policy of engine HTTP calls: `attempts` tries, backoff `baseMs * 2^i` capped at `maxMs`. */
export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
  /** Per-attempt timeout in ms. */
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseMs: 100, maxMs: 2000, timeoutMs: 600_000 };

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });

/**
 * JSON over HTTP to one engine, with retries and backoff on what may pass (network errors, timeouts,
 * 5xx, 429, 408). Another 4xx is the caller's fault and is not retried. With `apiKey`, every request
 * carries `Authorization: Bearer <apiKey>` (SGLang's and vLLM's `--api-key`, the built-in engine's tokens).
 * @throws EngineUnavailableError when every attempt failed; EngineContextExceededError on a 4xx saying the
 *   context window is exceeded; EngineResponseError on another 4xx or a non-JSON body;
 *   the caller's abort reason when `signal` fires.
 */
export async function requestJson(
  engineId: string,
  baseUrl: string,
  path: string,
  init: { method?: 'GET' | 'POST'; body?: unknown; signal?: AbortSignal; expectJson?: boolean; apiKey?: string | null },
  retry: RetryPolicy,
): Promise<unknown> {
  let lastError: unknown;
  for (let attempt = 0; attempt < retry.attempts; attempt++) {
    if (attempt > 0) await sleep(Math.min(retry.maxMs, retry.baseMs * 2 ** (attempt - 1)), init.signal);
    if (init.signal?.aborted) throw init.signal.reason ?? new Error('aborted');
    const timeout = AbortSignal.timeout(retry.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res: Response;
    try {
      res = await fetch(baseUrl + path, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers: {
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(init.apiKey ? { authorization: `Bearer ${init.apiKey}` } : {}),
        },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal,
      });
    } catch (e) {
      if (init.signal?.aborted) throw init.signal.reason ?? e;
      lastError = e;
      continue;
    }
    const text = await res.text().catch((e: unknown) => {
      lastError = e;
      return null;
    });
    if (text === null) continue;
    // 408: the server did not receive the whole request, so nothing ran; RFC 9110 §15.5.9 lets the
    // client repeat it.
    if (res.status >= 500 || res.status === 429 || res.status === 408) {
      lastError = new Error(`HTTP ${res.status} ${text.slice(0, 200)}`);
      continue;
    }
    if (isContextExceededAnswer(res.status, text)) throw new EngineContextExceededError(engineId, `${path} answered HTTP ${res.status}: ${text.slice(0, 300)}`);
    if (res.status >= 400) throw new EngineResponseError(engineId, `${path} answered HTTP ${res.status}: ${text.slice(0, 300)}`);
    if (init.expectJson === false) return text;
    try {
      return text === '' ? null : JSON.parse(text);
    } catch {
      throw new EngineResponseError(engineId, `${path} answered non-JSON: ${text.slice(0, 200)}`);
    }
  }
  const msg = lastError instanceof Error ? `${lastError.message}${(lastError as { cause?: { code?: string } }).cause?.code ? ` (${(lastError as { cause: { code: string } }).cause.code})` : ''}` : String(lastError);
  throw new EngineUnavailableError(engineId, `${path} failed ${retry.attempts} times: ${msg}`, lastError);
}

/**
 * One `GET /health` without retries (5 s timeout): true when the engine answers, false when it is
 * unreachable or answers with an error. Other failures (a bug) are rethrown.
 */
export async function probeHealth(engineId: string, url: string, retry: RetryPolicy, apiKey: string | null = null): Promise<boolean> {
  try {
    await requestJson(engineId, url, '/health', { expectJson: false, apiKey }, { ...retry, attempts: 1, timeoutMs: 5000 });
    return true;
  } catch (e) {
    if (e instanceof EngineUnavailableError || e instanceof EngineResponseError) return false;
    throw e;
  }
}
