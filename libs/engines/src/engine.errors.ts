import { RstarError, type RstarErrorOptions } from '@rstar/contracts';
/** Base class of engine errors; `code` is machine-readable, `engineId` names the engine. */
export class EngineError extends RstarError {
  constructor(
    code: string,
    message: string,
    readonly engineId: string,
    options: RstarErrorOptions = {},
  ) {
    super(code, message, null, options);
  }
}

/** The engine did not answer (connection refused/reset, timeout, 5xx) after every retry: take it out of rotation. */
export class EngineUnavailableError extends EngineError {
  constructor(engineId: string, message: string, cause?: unknown) {
    super('engine_unavailable', `engine ${engineId} unavailable: ${message}`, engineId, { cause });
  }
}

/** The engine answered with something this adapter cannot use (4xx, malformed JSON, missing fields). Not retried. */
export class EngineResponseError extends EngineError {
  constructor(engineId: string, message: string) {
    super('engine_bad_response', `engine ${engineId}: ${message}`, engineId);
  }
}

/**
 * The engine answered 4xx because the request's context (prompt + response so far + max new tokens)
 * does not fit its context window. The pool turns it into `@rstar/agent`'s `ContextExceededError`, which
 * ends the rollout truncated (`context_exceeded`) instead of failing it.
 */
export class EngineContextExceededError extends EngineResponseError {
  override readonly code = 'engine_context_exceeded';
}

/**
 * True when an engine's 4xx body says the context window was exceeded: SGLang ("longer than the model's
 * context length"), vLLM ("maximum context length is", "max_model_len") and the built-in engine
 * (`context_overflow`). Other 4xx answers (bad parameters) stay {@link EngineResponseError}.
 */
export function isContextExceededAnswer(status: number, body: string): boolean {
  if (status < 400 || status >= 500) return false;
  return /context[ _]length|context window|context_overflow|exceeds the model context|max_model_len|longer than the model/i.test(body);
}

/** The engine kind has no such operation (e.g. weight reload on a stock vLLM server). */
export class EngineUnsupportedError extends EngineError {
  constructor(engineId: string, operation: string, hint: string) {
    super('engine_unsupported', `engine ${engineId} does not support ${operation}: ${hint}`, engineId);
  }
}

/** An engine spec (`kind=url`) that cannot be parsed. */
export class EngineSpecError extends EngineError {
  constructor(spec: string, message: string) {
    super('invalid_engine_spec', `invalid engine spec "${spec}": ${message}`, spec);
  }
}

/** No engine can ever hold a rollout's reservation (it exceeds every live engine's KV capacity), or none is up. */
export class NoEngineError extends EngineError {
  constructor(message: string) {
    super('no_engine', message, '');
  }
}

/** A rollout needs more KV tokens (prompt + budget) than the largest engine holds: it could never run. */
export class ReservationTooLargeError extends EngineError {
  constructor(rolloutId: string, tokens: number, largest: number) {
    super('reservation_too_large', `rollout ${rolloutId} needs ${tokens} KV tokens (prompt + budget) but the largest engine holds ${largest}; lower budget.maxTokens or add KV capacity`, '');
  }
}

/** A run config's engine leaves its URL out and the service's own engine list (RSTAR_ENGINES) has no entry to fill it. */
export class RunEngineUrlMissingError extends RstarError {
  constructor(index: number, envCount: number) {
    super(
      'run_engine_url_missing',
      `engines.${index}.url is not set and RSTAR_ENGINES names ${envCount} engine${envCount === 1 ? '' : 's'} (no entry ${index} to take it from): give engines.${index}.url in the run config`,
      `engines.${index}.url`,
    );
  }
}
