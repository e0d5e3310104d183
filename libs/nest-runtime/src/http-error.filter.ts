import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { RstarError } from '@rstar/contracts';

/**
 * HTTP statuses of the error codes a route can meet, where a code's conventions do not already say it
 * (see {@link httpStatusOf}). Codes are the stable `RstarError.code` values of the libs.
 */
const STATUS_OF_CODE: Readonly<Record<string, number>> = {
  // 503: a dependency or capacity that may come back; the client retries (see /health/ready).
  dependency_not_ready: 503,
  stream_missing: 503,
  engine_unavailable: 503,
  no_engine: 503,
  pool_not_running: 503,
  isolation_unavailable: 503,
  overloaded: 503,
  bus_closed: 503,
  publish_timeout: 503,
  trainer_worker_unavailable: 503,
  // 400: input the caller can fix (named by `field`).
  unknown_event: 400,
  grpo_invalid_input: 400,
  kv_capacity_exceeded: 400,
  reservation_too_large: 400,
  mixed_runs: 400,
  // 409: the request contradicts what is already recorded.
  trainer_step_conflict: 409,
  batch_hash_mismatch: 409,
};

/**
 * The HTTP status of an error, from its stable `code` (never its message): the table above first, then
 * the conventions every lib follows: `*_not_found` is 404, `invalid_*`/`*_invalid`/`*_invalid_input` is
 * 400, `*_conflict` is 409. A Nest `HttpException` keeps its own status; anything else is 500.
 */
export function httpStatusOf(e: unknown): number {
  if (e instanceof HttpException) return e.getStatus();
  if (!(e instanceof RstarError)) return 500;
  const code = e.code;
  if (code in STATUS_OF_CODE) return STATUS_OF_CODE[code];
  if (code === 'not_found' || code.endsWith('_not_found')) return 404;
  if (code.startsWith('invalid_') || code.endsWith('_invalid') || code.endsWith('_invalid_input')) return 400;
  if (code.endsWith('_conflict')) return 409;
  return 500;
}

/** The JSON body of every error answer: `{ statusCode, code, field, message }`. */
export interface HttpErrorBody {
  statusCode: number;
  /** The error's stable code (`RstarError.code`), `http_<status>` for a Nest HttpException, `internal` for a 500 of an unknown error. */
  code: string;
  /** The offending input (query parameter, body field) or null. */
  field: string | null;
  message: string;
}

/** The answer body of `e` with status `status` (an unknown error's message is not shown: it may hold internals). */
export function httpErrorBody(e: unknown, status: number): HttpErrorBody {
  if (e instanceof RstarError) return { statusCode: status, code: e.code, field: e.field, message: e.message };
  if (e instanceof HttpException) {
    const r = e.getResponse();
    const o = typeof r === 'object' && r !== null ? (r as Record<string, unknown>) : {};
    const message = typeof r === 'string' ? r : Array.isArray(o.message) ? o.message.join('; ') : String(o.message ?? e.message);
    // Extra keys a controller put in its answer (tool-execution's `status: 'invalid_request'`) are kept.
    return { ...o, statusCode: status, code: typeof o.code === 'string' ? o.code : `http_${status}`, field: typeof o.field === 'string' ? o.field : null, message };
  }
  return { statusCode: 500, code: 'internal', field: null, message: 'internal error (logged by the service)' };
}

/**
 * The one exception filter of every rstar service (registered globally by {@link HealthModule} with
 * `APP_FILTER`, so no controller carries its own): maps an error's `code` to its HTTP status with
 * {@link httpStatusOf} and answers {@link HttpErrorBody}. A 500 of our own is logged with its stack.
 */
@Catch()
export class RstarHttpErrorFilter implements ExceptionFilter {
  private readonly log = new Logger('http');

  catch(e: unknown, host: ArgumentsHost): void {
    const status = httpStatusOf(e);
    // A 500 is a bug or an unexpected failure: log it. A 503 (not ready) and Nest's own answers (a failing
    // /health/ready, polled all the time) are expected and say everything in the answer.
    if (status >= 500 && status !== 503 && !(e instanceof HttpException)) this.log.error((e as Error)?.message ?? String(e), (e as Error)?.stack);
    const res = host.switchToHttp().getResponse<{ headersSent?: boolean; status(s: number): { json(b: unknown): void }; end(): void }>();
    // A streamed answer (server-sent events) that already began cannot change its status: end it.
    if (res.headersSent) return void res.end();
    res.status(status).json(httpErrorBody(e, status));
  }
}
