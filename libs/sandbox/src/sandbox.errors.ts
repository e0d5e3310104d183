/**
 * How the stderr of an `invalid_request` result starts (the request itself was invalid and never ran);
 * the rest names the field and the fix. Pool, HTTP client, NATS responder and `rstar exec` all use it.
 */
export const INVALID_REQUEST_PREFIX = 'invalid request: ';

/** Base class of sandbox errors; `code` is machine-readable. */
export class SandboxError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A request field is missing or invalid; `field` names it and the message says how to fix it. */
export class InvalidRequestError extends SandboxError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super('invalid_request', `${field}: ${message}`);
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

/** A zygote could not start (Python missing, imports failing, sandbox refused). */
export class WorkerStartError extends SandboxError {
  constructor(message: string) {
    super('worker_start_failed', message);
  }
}
