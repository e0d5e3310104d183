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
