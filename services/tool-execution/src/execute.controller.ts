import { Body, Controller, Get, HttpCode, HttpException, Inject, Post, Res } from '@nestjs/common';
import { RequireScope } from '@rstar/nest-runtime';
import { InvalidRequestError, resolveRequest, DEFAULT_MAXIMA, type ExecResult, type SandboxPool } from '@rstar/sandbox';
import { executeMeasured, type ToolExecutionMetrics } from '@rstar/tool-calls';
import { SANDBOX_POOL, TOOL_METRICS } from './tokens';

/** The part of the HTTP response the controller touches. */
interface HttpResponse {
  status(code: number): unknown;
  setHeader(name: string, value: string): unknown;
}

/** Most requests one batch may carry. */
export const MAX_BATCH = 1024;

/**
 * HTTP API of tool-execution: `POST /v1/execute` (one `ExecRequest` -> `ExecResult`; 400 naming the
 * field for an invalid request, 429 + Retry-After when overloaded), `POST /v1/execute/batch`
 * (`{requests: ExecRequest[]}` -> `{results}` in order), `GET /v1/sandbox` (the pool's health: isolation,
 * workers, queue, Python). Probes and metrics are nest-runtime's `/health/*` and `/metrics`. Running code
 * needs a token with scope `execute`, reading the pool's health `read` (when tokens are configured).
 * An authorized, valid `POST /v1/execute` is answered before it reaches this controller, by
 * `ExecuteFastPath` (execute.fast-path.ts, same answer); this route answers the refusals and invalid bodies.
 */
@Controller()
@RequireScope('execute')
export class ExecuteController {
  constructor(
    @Inject(SANDBOX_POOL) private readonly pool: SandboxPool,
    @Inject(TOOL_METRICS) private readonly metrics: ToolExecutionMetrics,
  ) {}

  @Post('v1/execute')
  @HttpCode(200)
  async execute(@Body() body: unknown, @Res({ passthrough: true }) res: HttpResponse): Promise<ExecResult> {
    try {
      const h = this.pool.health();
      resolveRequest(body, h.defaults, { ...DEFAULT_MAXIMA, ...h.maxima });
    } catch (e) {
      if (e instanceof InvalidRequestError)
        throw new HttpException({ status: 'invalid_request', code: e.code, field: e.field, message: e.message }, 400);
      throw e;
    }
    const r = await executeMeasured(this.pool, this.metrics, body as never);
    if (r.status === 'overloaded') {
      res.status(429);
      res.setHeader('Retry-After', '1');
    }
    return r;
  }

  @Post('v1/execute/batch')
  @HttpCode(200)
  async batch(@Body() body: unknown): Promise<{ results: ExecResult[] }> {
    const requests = (body as { requests?: unknown } | null)?.requests;
    if (!Array.isArray(requests))
      throw new HttpException({ status: 'invalid_request', field: 'requests', message: 'requests: must be an array of ExecRequest objects' }, 400);
    if (requests.length > MAX_BATCH)
      throw new HttpException({ status: 'invalid_request', field: 'requests', message: `requests: at most ${MAX_BATCH} per batch` }, 400);
    // Invalid items get their own invalid_request result; the rest run.
    const results = await Promise.all(requests.map((r) => executeMeasured(this.pool, this.metrics, r as never)));
    return { results };
  }

  @Get('v1/sandbox')
  @RequireScope('read')
  sandbox(): unknown {
    return this.pool.health();
  }
}
