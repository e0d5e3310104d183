import type { INestApplication } from '@nestjs/common';
import { RstarError } from '@rstar/contracts';

/**
 * Largest request body a service accepts when its settings name none (`RSTAR_HTTP_BODY_LIMIT_BYTES`):
 * body-parser's own default (100 KiB), so services that declare nothing keep what they accepted before.
 */
export const DEFAULT_BODY_LIMIT_BYTES = 100 * 1024;

/**
 * A request body the service refused before any route saw it: larger than the service's limit
 * (HTTP 413), not valid JSON (400), or in an encoding or charset it cannot read (415). Answered with
 * the project's `invalid_request` JSON (`{status, code, field: "body", message}`), never Express's HTML.
 */
export class RequestBodyError extends RstarError {
  constructor(
    readonly httpStatus: number,
    message: string,
  ) {
    super('invalid_request', message, 'body');
  }

  /** The JSON body of the HTTP answer. */
  toJSON(): { status: 'invalid_request'; code: string; field: string; message: string } {
    return { status: 'invalid_request', code: this.code, field: 'body', message: this.message };
  }
}

/** What body-parser puts on the errors it passes on (http-errors). */
interface ParserError {
  type?: string;
  status?: number;
  limit?: number;
  length?: number;
  message?: string;
}

/**
 * The {@link RequestBodyError} for an error of the body parsers, or null when `err` is not one of theirs.
 * `limitBytes` and `limitSetting` go into the message of a body that was too large.
 */
export function requestBodyErrorOf(err: unknown, limitBytes: number, limitSetting: string): RequestBodyError | null {
  const e = err as ParserError | null;
  if (!e || typeof e !== 'object' || typeof e.type !== 'string') return null;
  switch (e.type) {
    case 'entity.too.large':
      return new RequestBodyError(
        413,
        `the request body${e.length !== undefined && Number.isFinite(e.length) ? ` (${e.length} bytes)` : ''} is larger than this service's limit of ${limitBytes} bytes (${limitSetting}); send less per request (e.g. smaller batches) or raise ${limitSetting}`,
      );
    case 'entity.parse.failed':
      return new RequestBodyError(400, `the request body is not valid JSON (${e.message ?? 'parse error'}); send one JSON object with Content-Type: application/json`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new RequestBodyError(415, `${e.message ?? 'unsupported body encoding'}; send UTF-8 JSON (Content-Encoding gzip, deflate or identity)`);
    case 'request.size.invalid':
    case 'request.aborted':
      return new RequestBodyError(400, `${e.message ?? 'the request body was cut short'}; send the whole body with a matching Content-Length`);
    default:
      return null;
  }
}

/** The Express surface {@link useBodyLimits} uses (Nest's Express adapter). */
interface ExpressLikeApp {
  useBodyParser(type: 'json' | 'urlencoded', options: Record<string, unknown>): unknown;
  use(handler: (err: unknown, req: unknown, res: ExpressResponse, next: (e?: unknown) => void) => void): unknown;
}
interface ExpressResponse {
  headersSent: boolean;
  status(code: number): ExpressResponse;
  json(body: unknown): unknown;
}

/**
 * Parse JSON and urlencoded bodies up to `limitBytes` (instead of body-parser's 100 KB default) and answer
 * a body the parsers refuse with a {@link RequestBodyError} as JSON. Call on an app created with
 * `bodyParser: false`, before it listens (Express runs middleware in the order it was added, so these
 * come before every route and the error handler right after the parsers catches only their errors).
 */
export function useBodyLimits(app: INestApplication, limitBytes: number, limitSetting = 'RSTAR_HTTP_BODY_LIMIT_BYTES'): void {
  const express = app as unknown as ExpressLikeApp;
  express.useBodyParser('json', { limit: limitBytes });
  express.useBodyParser('urlencoded', { limit: limitBytes, extended: true });
  express.use((err, _req, res, next) => {
    const mapped = requestBodyErrorOf(err, limitBytes, limitSetting);
    if (!mapped || res.headersSent) return next(err);
    res.status(mapped.httpStatus).json(mapped.toJSON());
  });
}
