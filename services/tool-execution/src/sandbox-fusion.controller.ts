import { Body, Controller, HttpException, Inject, Post, Res } from '@nestjs/common';
import { execToSandboxFusion, InvalidRequestError, sandboxFusionToExec, type SandboxFusionRunCodeResponse, type SandboxPool } from '@rstar/sandbox';
import { RequireScope } from '@rstar/nest-runtime';
import type { DropInRouteDefaults } from './sandbox-pool.provider';
import { DROP_IN_DEFAULTS, SANDBOX_POOL, TOOL_METRICS } from './tokens';
import { executeMeasured, type ToolExecutionMetrics } from '@rstar/tool-calls';

/** The part of the HTTP response the controller touches. */
interface HttpResponse {
  status(code: number): unknown;
  setHeader(name: string, value: string): unknown;
}

/**
 * SandboxFusion's `POST /run_code`, so verl's sandbox tool (and SandboxFusion's own client) can use
 * tool-execution by changing its URL; without `run_timeout` a program gets SandboxFusion's 10 s
 * (`RSTAR_SANDBOX_FUSION_TIMEOUT_MS`). Mapping: libs/sandbox/src/compat (README "Drop-in APIs"). Needs a
 * token with scope `execute` when tokens are configured.
 */
@Controller()
@RequireScope('execute')
export class SandboxFusionController {
  constructor(
    @Inject(SANDBOX_POOL) private readonly pool: SandboxPool,
    @Inject(TOOL_METRICS) private readonly metrics: ToolExecutionMetrics,
    @Inject(DROP_IN_DEFAULTS) private readonly defaults: DropInRouteDefaults,
  ) {}

  @Post('run_code')
  async runCode(@Body() body: unknown, @Res({ passthrough: true }) res: HttpResponse): Promise<SandboxFusionRunCodeResponse> {
    let req;
    try {
      req = sandboxFusionToExec(body, this.defaults.sandboxFusion);
    } catch (e) {
      if (e instanceof InvalidRequestError)
        throw new HttpException({ status: 'invalid_request', code: e.code, field: e.field, message: e.message }, 400);
      throw e;
    }
    const out = execToSandboxFusion(await executeMeasured(this.pool, this.metrics, req));
    res.status(out.httpStatus);
    if (out.httpStatus === 429) res.setHeader('Retry-After', '1');
    return out.body;
  }
}
