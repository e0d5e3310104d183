import { RstarError } from '@rstar/contracts';
/** Base class of built-in engine errors; `code` is machine-readable, `status` the HTTP status it maps to. */
export class BuiltinEngineError extends RstarError {
  constructor(
    code: string,
    message: string,
    readonly status: number,
    field: string | null = null,
  ) {
    super(code, message, field);
  }
}

/** A malformed request body; the message names the field and the fix. */
export class EngineRequestError extends BuiltinEngineError {
  constructor(message: string, field: string | null) {
    super('invalid_request', message, 400, field);
  }
}

/** A request that can never fit: its prompt plus max new tokens exceed the KV-cache capacity. */
export class KvCapacityError extends BuiltinEngineError {
  constructor(needed: number, capacity: number) {
    super('kv_capacity_exceeded', `request needs ${needed} KV tokens (prompt + max_new_tokens) but the engine holds ${capacity} (lower max_new_tokens or start the engine with a larger --kv-capacity)`, 400, 'max_new_tokens');
  }
}

/** Requests queued beyond the queue limit are refused (HTTP 503) rather than held forever. */
export class EngineOverloadedError extends BuiltinEngineError {
  constructor(limit: number) {
    super('overloaded', `the engine queue is full (${limit} requests); retry later`, 503, null);
  }
}
