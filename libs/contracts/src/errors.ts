/** Options of {@link RstarError}: the error that caused this one (kept as the standard `Error.cause`). */
export interface RstarErrorOptions {
  cause?: unknown;
}

/**
 * Base class of every rstar error: `code` is machine-readable and stable (snake_case; callers and the
 * HTTP error filter of @rstar/nest-runtime match on it, never on the message), `field` names the
 * offending input path (or null), `cause` is the underlying error (or undefined), and the message says
 * the fix. Each lib derives its own base from it.
 */
export class RstarError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly field: string | null = null,
    options: RstarErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }
}

/** Base class of contract errors. */
export class ContractError extends RstarError {}

/** A payload that is not a valid event: not JSON, wrong envelope or wrong data. Never retried: dead-letter it. */
export class InvalidEventError extends ContractError {
  constructor(message: string, field: string | null) {
    super('invalid_event', message, field);
  }
}

/** An event whose `type` no contract names (or a version newer than this code knows). */
export class UnknownEventError extends ContractError {
  constructor(message: string, field: string | null = 'type') {
    super('unknown_event', message, field);
  }
}

/** An invalid run config; the message names the field and the fix. */
export class ConfigError extends ContractError {
  constructor(message: string, field: string | null) {
    super('invalid_config', message, field);
  }
}

/**
 * `async.partialRollouts` is on but an engine cannot interrupt a turn and hand back the tokens it generated
 * so far (see {@link ENGINE_KINDS_WITH_PARTIAL_ABORT}); `engineKind` and `engineIndex` name it.
 */
export class PartialRolloutsUnsupportedError extends ConfigError {
  constructor(
    readonly engineIndex: number,
    readonly engineKind: string,
  ) {
    super(
      `async.partialRollouts is true but engines.${engineIndex} is kind "${engineKind}", which cannot interrupt a turn and return the tokens generated so far ` +
        '(its abort drops the answer); use engines of kind sglang or builtin (the reference engine speaks sglang), or set async.partialRollouts to false',
      'async.partialRollouts',
    );
  }
}

/**
 * Engine kinds whose abort answers the interrupted request with the tokens and logprobs generated so far
 * (SGLang's `/abort_request` finishes the request with `finish_reason.type = "abort"` and its partial output;
 * the built-in and reference engines do the same), so a partial rollout can continue the turn under new
 * weights. vLLM's adapter aborts by closing the connection, and the answer is lost.
 */
export const ENGINE_KINDS_WITH_PARTIAL_ABORT: readonly string[] = ['builtin', 'sglang'];
