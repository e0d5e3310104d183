import { RstarError } from '@rstar/contracts';
/**
 * How the stderr of an `invalid_request` result starts (the request itself was invalid and never ran);
 * the rest names the field and the fix. Pool, HTTP client, NATS responder and `rstar exec` all use it.
 */
export const INVALID_REQUEST_PREFIX = 'invalid request: ';

/** Base class of sandbox errors; `code` is machine-readable. */
export class SandboxError extends RstarError {}

/** A request field is missing or invalid; `field` names it and the message says how to fix it. */
export class InvalidRequestError extends SandboxError {
  declare readonly field: string;
  constructor(field: string, message: string) {
    super('invalid_request', `${field}: ${message}`, field);
  }
}

/** The pool was used before `start()` or after `close()`. */
export class PoolNotRunningError extends SandboxError {
  constructor(message: string) {
    super('pool_not_running', message);
  }
}

/** Isolation `bwrap` was required but bubblewrap is not usable here. */
export class IsolationUnavailableError extends SandboxError {
  constructor(message: string) {
    super('isolation_unavailable', message);
  }
}

/** A zygote answered with a frame that breaks the protocol (zygote.frames.ts): the worker is replaced. */
export class ZygoteProtocolError extends SandboxError {
  constructor(message: string) {
    super('zygote_protocol', message);
  }
}

/** A data folder the sandbox was pointed at does not exist; `field` names the option. */
export class SandboxDataNotFoundError extends SandboxError {
  constructor(message: string, field: string) {
    super('data_not_found', message, field);
  }
}

/** A zygote could not start (Python missing, imports failing, sandbox refused). */
export class WorkerStartError extends SandboxError {
  constructor(message: string) {
    super('worker_start_failed', message);
  }
}
