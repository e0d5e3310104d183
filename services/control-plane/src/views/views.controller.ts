import { Controller, Get, Param, Query } from '@nestjs/common';
import { RequireScope } from '@rstar/nest-runtime';
import { intParam, rolloutQuery } from '@rstar/run-views';
import { RunViewsProvider } from './run-views.provider';

/**
 * The dashboard's JSON API (`/v1/views`, shapes in @rstar/run-views `views.ts`); each route is one
 * read of the `RunViewReader`. Step numbers are 0-based. Errors: 404 unknown run/step/rollout, 400 a bad
 * query parameter (named), 503 while the archive is not connected.
 */
@Controller('v1/views')
@RequireScope('read')
export class ViewsController {
  constructor(private readonly views: RunViewsProvider) {}

  /** `GET /v1/views/runs?limit=` (1..1000, default 200) -> `{ runs }`, newest first. */
  @Get('runs')
  async runs(@Query('limit') limit?: string) {
    return { runs: await this.views.reader().listRuns({ limit: intParam('limit', limit, 200, 1, 1000)! }) };
  }

  /** `GET /v1/views/runs/:id` -> the run page (config, stages, a metrics row per step, evaluations, reruns, cursor). */
  @Get('runs/:id')
  run(@Param('id') runId: string) {
    return this.views.reader().run(runId);
  }

  /** `GET /v1/views/runs/:id/steps/:step` -> the step page (groups, rollouts). */
  @Get('runs/:id/steps/:step')
  step(@Param('id') runId: string, @Param('step') step: string) {
    return this.views.reader().step(runId, intParam('step', step, undefined, 0, 1e9)!);
  }

  /** `GET /v1/views/runs/:id/rollouts?step=&outcome=all|correct|wrong&offset=&limit=` -> a page of graded rollouts. */
  @Get('runs/:id/rollouts')
  rollouts(@Param('id') runId: string, @Query() q: Record<string, string | undefined>) {
    return this.views.reader().rollouts(runId, rolloutQuery(q));
  }

  /** `GET /v1/views/runs/:id/rollouts/:rolloutId` -> the rollout page (transcript, tokens). */
  @Get('runs/:id/rollouts/:rolloutId')
  rollout(@Param('id') runId: string, @Param('rolloutId') rolloutId: string) {
    return this.views.reader().rollout(runId, rolloutId);
  }

  /** `GET /v1/views/runs/:id/replay?step=` -> verify (no re-execution) and the recorded reruns' comparisons. */
  @Get('runs/:id/replay')
  replay(@Param('id') runId: string, @Query('step') step?: string) {
    return this.views.reader().replay(runId, { step: intParam('step', step, undefined, 0, 1e9) });
  }

  /** `GET /v1/views/runs/:id/sandbox` -> tool calls by status, latency percentiles, calls over time. */
  @Get('runs/:id/sandbox')
  sandbox(@Param('id') runId: string) {
    return this.views.reader().sandbox(runId);
  }
}
