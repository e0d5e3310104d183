import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import { requestToken, SECURITY_SETTINGS } from '@rstar/nest-runtime';
import { DEFAULT_MAXIMA, InvalidRequestError, resolveRequest, type SandboxPool } from '@rstar/sandbox';
import type { SecuritySettings } from '@rstar/security';
import { executeMeasured, type ToolExecutionMetrics } from '@rstar/tool-calls';
import { SANDBOX_POOL, TOOL_METRICS } from './tokens';

/** The parts of Express's request and response the fast path reads and writes. */
interface FastRequest {
  method?: string;
  url?: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}
interface FastResponse {
  statusCode: number;
  setHeader(name: string, value: string | number): unknown;
  end(body: string): unknown;
}

/**
 * POST /v1/execute answered without Nest's route pipeline (guard, interceptors, body pipe, reply
 * handling): the most frequent call of the service, whose lone-call latency that pipeline roughly
 * doubled over a bare HTTP hop (libs/sandbox README, issue 28). It answers only the common case and
 * hands every other one to the route, which answers it exactly as before: a request whose token is
 * missing or lacks scope `execute` (the guard answers 401/403 and logs the refusal), or whose body is
 * invalid (the controller answers 400 naming the field). Bodies were already read by the service's
 * body parsers (limits, 413/400/415 answers unchanged). The answer is the one the controller gives:
 * 200, or 429 with `Retry-After: 1` when the pool is overloaded, `application/json; charset=utf-8`.
 * A failure of the pool itself is thrown and answered by the service's exception filter.
 */
@Injectable()
export class ExecuteFastPath implements NestMiddleware<FastRequest, FastResponse> {
  constructor(
    @Inject(SANDBOX_POOL) private readonly pool: SandboxPool,
    @Inject(TOOL_METRICS) private readonly metrics: ToolExecutionMetrics,
    @Inject(SECURITY_SETTINGS) private readonly security: SecuritySettings,
  ) {}

  async use(req: FastRequest, res: FastResponse, next: (err?: unknown) => void): Promise<void> {
    if (req.method !== 'POST' || !this.authorized(req) || !this.valid(req.body)) return next();
    const r = await executeMeasured(this.pool, this.metrics, req.body as never);
    const json = JSON.stringify(r);
    res.statusCode = r.status === 'overloaded' ? 429 : 200;
    if (r.status === 'overloaded') res.setHeader('Retry-After', '1');
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(json));
    res.end(json);
  }

  /** True when no token is configured or the request's bearer token carries scope `execute`. */
  private authorized(req: FastRequest): boolean {
    const tokens = this.security.apiTokens;
    if (tokens.size === 0) return true;
    const token = requestToken(req);
    return token !== null && tokens.authorizeToken(token, 'execute').ok;
  }

  /** True when the pool would take the body as it is (the controller answers anything else). */
  private valid(body: unknown): boolean {
    try {
      const h = this.pool.health();
      resolveRequest(body, h.defaults, { ...DEFAULT_MAXIMA, ...h.maxima });
      return true;
    } catch (e) {
      if (e instanceof InvalidRequestError) return false;
      throw e;
    }
  }
}
