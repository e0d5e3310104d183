import { BadRequestException, Controller, Get, NotFoundException, Param, Query } from '@nestjs/common';
import { EVENT_TYPES, type EventType } from '@rstar/contracts';
import { decodePosition, encodePosition, EventStoreError, START } from '@rstar/event-store';
import { ReadModelsConnection, RequireScope, StoreConnection } from '@rstar/nest-runtime';

/**
 * The runs API. Runs, steps, groups, rollouts and tool calls come from the read models (kept current by
 * the projector: a few hundred milliseconds behind the archive); a run's raw events come from the
 * archive, paged by an opaque `<txid>-<position>` cursor.
 */
@Controller('v1')
@RequireScope('read')
export class RunsController {
  constructor(
    private readonly store: StoreConnection,
    private readonly readModels: ReadModelsConnection,
  ) {}

  /** `GET /v1/runs?limit=&status=` -> `{ runs }`: summaries (replay's `runSummary` plus archive times), most recent activity first. */
  @Get('runs')
  async list(@Query('limit') limit?: string, @Query('status') status?: string) {
    if (status !== undefined && !['running', 'completed', 'failed'].includes(status)) {
      throw new BadRequestException(`query "status" must be running, completed or failed, got "${status}"`);
    }
    return { runs: await this.readModels.current().repository.listRuns({ limit: parseLimit(limit, 100), status: status as 'running' | undefined }) };
  }

  /** `GET /v1/runs/:id` -> `{ summary, steps }` (404 for a run the read models do not know yet). */
  @Get('runs/:id')
  async run(@Param('id') runId: string) {
    const repo = this.readModels.current().repository;
    const summary = await repo.runSummary(runId);
    if (!summary) throw new NotFoundException(`run "${runId}" is not in the read models (not archived yet, or a wrong id)`);
    return { summary, steps: await repo.stepTable(runId) };
  }

  /** `GET /v1/runs/:id/groups?step=&group=` -> `{ groups }`: rewards, RoC penalties, kept and dropped, advantages. */
  @Get('runs/:id/groups')
  async groups(@Param('id') runId: string, @Query('step') step?: string, @Query('group') groupId?: string) {
    return { groups: await this.readModels.current().repository.groupTable(runId, { step: parseStep(step), groupId: groupId || undefined }) };
  }

  /**
   * `GET /v1/runs/:id/rollouts?step=&group=&after=&limit=` -> `{ rollouts, next }`: turn counts, tool calls and
   * errors, reward and rule, engine and policy version; pass `next` as `after` for the following page (null at the end).
   */
  @Get('runs/:id/rollouts')
  async rollouts(@Param('id') runId: string, @Query('step') step?: string, @Query('group') groupId?: string, @Query('after') after?: string, @Query('limit') limit?: string) {
    const n = parseLimit(limit, 100);
    const rollouts = await this.readModels.current().repository.rollouts(runId, { step: parseStep(step), groupId: groupId || undefined, after: after || undefined, limit: n });
    return { rollouts, next: rollouts.length === n ? rollouts[rollouts.length - 1].rolloutId : null };
  }

  /** `GET /v1/rollouts/:id` -> `{ rollout, toolCalls }` (404 when unknown). */
  @Get('rollouts/:id')
  async rollout(@Param('id') rolloutId: string) {
    const repo = this.readModels.current().repository;
    const rollout = await repo.rollout(rolloutId);
    if (!rollout) throw new NotFoundException(`rollout "${rolloutId}" is not in the read models`);
    return { rollout, toolCalls: await repo.toolCalls(rolloutId) };
  }

  /**
   * `GET /v1/runs/:id/events?after=&limit=&type=` -> `{ events, next }`; `type` may repeat or be
   * comma-separated; pass `next` back as `after` for the following page (it is `after` when empty).
   */
  @Get('runs/:id/events')
  async events(
    @Param('id') runId: string,
    @Query('after') after?: string,
    @Query('limit') limit?: string,
    @Query('type') type?: string | string[],
  ) {
    const types = (Array.isArray(type) ? type : type ? [type] : []).flatMap((t) => t.split(',')).filter(Boolean);
    const unknown = types.filter((t) => !(EVENT_TYPES as string[]).includes(t));
    if (unknown.length) {
      throw new BadRequestException(`query "type": unknown event type(s) ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}`);
    }
    try {
      const page = await this.store.current().readRun(runId, {
        after: after ? decodePosition(after) : START,
        limit: parseLimit(limit, 1000),
        types: types as EventType[],
      });
      return { events: page.events, next: encodePosition(page.last) };
    } catch (e) {
      if (e instanceof EventStoreError && e.code === 'invalid_store_option') throw new BadRequestException(`query ${e.message}`);
      throw e;
    }
  }
}

function parseLimit(raw: string | undefined, dflt: number): number {
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) {
    throw new BadRequestException(`query "limit" must be an integer in 1..10000, got "${raw}"`);
  }
  return n;
}

function parseStep(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new BadRequestException(`query "step" must be a non-negative integer, got "${raw}"`);
  return n;
}
