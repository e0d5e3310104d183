import { Body, Controller, HttpCode, HttpException, Inject, Post } from '@nestjs/common';
import {
  codeJudgeToExec,
  execToCodeJudge,
  InvalidRequestError,
  invalidCodeJudgeResult,
  parseCodeJudgeBatch,
  parseCodeJudgeSubmission,
  type CodeJudgeResult,
  type SandboxPool,
} from '@rstar/sandbox';
import { RequireScope } from '@rstar/nest-runtime';
import type { DropInRouteDefaults } from './sandbox-pool.provider';
import { DROP_IN_DEFAULTS, SANDBOX_POOL, TOOL_METRICS } from './tokens';
import { executeMeasured, type ToolExecutionMetrics } from '@rstar/tool-calls';

const badRequest = (e: unknown): never => {
  if (e instanceof InvalidRequestError) throw new HttpException({ status: 'invalid_request', code: e.code, field: e.field, message: e.message }, 400);
  throw e;
};

/**
 * code-judge's `POST /run`, `/run/batch` and `/run/long-batch`, so rStar2's tool client can use
 * tool-execution by changing its URL (both batch routes answer when every submission has run). A
 * submission runs with code-judge's own 10 s limit unless `RSTAR_CODE_JUDGE_TIMEOUT_MS` says otherwise.
 * Mapping: libs/sandbox/src/compat (README "Drop-in APIs"). Needs a token with scope `execute` when tokens are configured.
 */
@Controller('run')
@RequireScope('execute')
export class CodeJudgeController {
  constructor(
    @Inject(SANDBOX_POOL) private readonly pool: SandboxPool,
    @Inject(TOOL_METRICS) private readonly metrics: ToolExecutionMetrics,
    @Inject(DROP_IN_DEFAULTS) private readonly defaults: DropInRouteDefaults,
  ) {}

  @Post()
  @HttpCode(200)
  async run(@Body() body: unknown): Promise<CodeJudgeResult> {
    let sub;
    try {
      sub = parseCodeJudgeSubmission(body);
    } catch (e) {
      return badRequest(e);
    }
    return execToCodeJudge(sub, await executeMeasured(this.pool, this.metrics, codeJudgeToExec(sub, this.defaults.codeJudge)));
  }

  @Post('batch')
  @HttpCode(200)
  batch(@Body() body: unknown): Promise<{ sub_id: string; results: CodeJudgeResult[] }> {
    return this.runBatch(body);
  }

  @Post('long-batch')
  @HttpCode(200)
  longBatch(@Body() body: unknown): Promise<{ sub_id: string; results: CodeJudgeResult[] }> {
    return this.runBatch(body);
  }

  private async runBatch(body: unknown): Promise<{ sub_id: string; results: CodeJudgeResult[] }> {
    let batch;
    try {
      batch = parseCodeJudgeBatch(body);
    } catch (e) {
      return badRequest(e);
    }
    const raw = (body as { submissions: unknown[] }).submissions;
    const results = await Promise.all(
      batch.items.map(async (item, i) =>
        item instanceof InvalidRequestError
          ? invalidCodeJudgeResult(raw[i], item)
          : execToCodeJudge(item, await executeMeasured(this.pool, this.metrics, codeJudgeToExec(item, this.defaults.codeJudge))),
      ),
    );
    return { sub_id: batch.sub_id, results };
  }
}
