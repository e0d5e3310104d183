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
import { SANDBOX_POOL, TOOL_METRICS } from './tokens';
import { executeMeasured, type ToolExecutionMetrics } from '@rstar/tool-calls';

const badRequest = (e: unknown): never => {
  if (e instanceof InvalidRequestError) throw new HttpException({ status: 'invalid_request', code: e.code, field: e.field, message: e.message }, 400);
  throw e;
};

/**
 * code-judge's `POST /run`, `/run/batch` and `/run/long-batch`, so rStar2's tool client can use
 * tool-execution by changing its URL (both batch routes answer when every submission has run).
 * Mapping: libs/sandbox/src/compat (README "Drop-in APIs").
 */
@Controller('run')
export class CodeJudgeController {
  constructor(
    @Inject(SANDBOX_POOL) private readonly pool: SandboxPool,
    @Inject(TOOL_METRICS) private readonly metrics: ToolExecutionMetrics,
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
    return execToCodeJudge(sub, await executeMeasured(this.pool, this.metrics, codeJudgeToExec(sub)));
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
          : execToCodeJudge(item, await executeMeasured(this.pool, this.metrics, codeJudgeToExec(item))),
      ),
    );
    return { sub_id: batch.sub_id, results };
  }
}
