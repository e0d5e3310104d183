import { In, type DataSource } from 'typeorm';
import type { GroupRow, RunSummaryView, StepRow } from '@rstar/replay';
import { GroupEntity } from './entities/group.entity';
import { RolloutEntity } from './entities/rollout.entity';
import { RunEntity } from './entities/run.entity';
import { StepEntity } from './entities/step.entity';
import { ToolCallEntity } from './entities/tool-call.entity';
import { toGroupRow, toStepRow, toSummary } from './read-model.rows';

/** One run in a listing: the summary plus the archive times (newest activity first). */
export interface RunListItem extends RunSummaryView {
  firstAt: string;
  lastAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** One rollout as the dashboard lists it. */
export interface RolloutView {
  rolloutId: string;
  groupId: string;
  step: number;
  promptIdx: number;
  sampleIdx: number;
  promptId: string | null;
  /** `requested` (not completed yet), `completed` (not graded yet) or `graded`. */
  status: 'requested' | 'completed' | 'graded';
  policyVersion: number | null;
  engineId: string | null;
  turns: number | null;
  toolCalls: number | null;
  toolErrors: number | null;
  answerBlocks: number | null;
  formatViolations: number | null;
  responseTokens: number | null;
  modelTokens: number | null;
  truncated: boolean | null;
  finishReason: string | null;
  reward: number | null;
  correct: boolean | null;
  /** The grader's deciding rule. */
  rule: string | null;
  extracted: string | null;
  /** What GRPO-RoC did with it: kept, dropped, or pending (group not resampled yet). */
  resample: 'kept' | 'dropped' | 'pending';
}

/** One tool call as recorded (outputs stay in the archive: `GET /v1/runs/:id/events`). */
export interface ToolCallView {
  callId: string;
  rolloutId: string;
  turn: number;
  tool: string | null;
  timeoutMs: number | null;
  status: string | null;
  wallMs: number | null;
  cpuMs: number | null;
  exitCode: number | null;
  signal: string | null;
  truncated: boolean | null;
  sessionReset: boolean | null;
}

/** Filters and paging of {@link ReadModelRepository.rollouts}. */
export interface RolloutQuery {
  step?: number;
  groupId?: string;
  /** Return rollouts after this id (ids sort as (step, prompt, sample) within a run); pass the last id of a page. */
  after?: string;
  /** Page size (default 100, at most 10,000). */
  limit?: number;
}

/**
 * Read access to the read models: the shapes of libs/replay's projections (`runSummary`, `stepTable`,
 * `groupTable`, equal to them on the same events) plus rollout and tool-call listings. Every method reads
 * committed rows only; nothing here writes. Used by control-plane's runs API, `rstar replay show`, the
 * resampler's restart, and the dashboard (through the API).
 */
export class ReadModelRepository {
  constructor(private readonly ds: DataSource) {}

  /** Runs, most recent activity first. `status` filters (e.g. `running`). */
  async listRuns(opts: { limit?: number; status?: 'running' | 'completed' | 'failed' } = {}): Promise<RunListItem[]> {
    const rows = await this.ds.getRepository(RunEntity).find({
      where: opts.status ? { status: opts.status } : {},
      order: { lastAt: 'DESC', runId: 'ASC' },
      take: checkLimit(opts.limit, 100),
    });
    return rows.map((r) => ({
      ...toSummary(r),
      firstAt: r.firstAt.toISOString(),
      lastAt: r.lastAt.toISOString(),
      startedAt: r.startedAt?.toISOString() ?? null,
      finishedAt: r.finishedAt?.toISOString() ?? null,
    }));
  }

  /** Ids of the runs still running (no RunCompleted / RunFailed recorded), newest first. */
  async runningRunIds(limit = 1000): Promise<string[]> {
    return (await this.listRuns({ status: 'running', limit })).map((r) => r.runId);
  }

  /**
   * Runs that may still have work in flight: those the read models show running, plus every run with
   * events the projector has not applied yet (a run started a moment ago). Exact whatever the projector's
   * lag; what the resampler rebuilds its open groups from after a restart (per-run queries, no scan).
   * `schema` is the archive's, `readModelSchema` the read models'; `projection` the checkpoint to compare
   * with (default `read-models`).
   */
  async openRunIds(schema: string, readModelSchema: string, projection = 'read-models'): Promise<string[]> {
    const running = await this.runningRunIds(10_000);
    const rows: Array<{ run_id: string }> = await this.ds.query(
      `SELECT DISTINCT e.run_id FROM "${schema}".events e
       LEFT JOIN "${readModelSchema}".projection_checkpoints c ON c.name = $1
       WHERE (e.transaction_id, e.global_position) > (COALESCE(c.txid, '0')::xid8, COALESCE(c.position, 0))`,
      [projection],
    );
    return [...new Set([...running, ...rows.map((r) => r.run_id)])];
  }

  /** The run's summary (replay's `runSummary`), or null for a run the read models do not know. */
  async runSummary(runId: string): Promise<RunSummaryView | null> {
    const r = await this.ds.getRepository(RunEntity).findOneBy({ runId });
    return r ? toSummary(r) : null;
  }

  /** The run's step table (replay's `stepTable`), in step order. */
  async stepTable(runId: string): Promise<StepRow[]> {
    const rows = await this.ds.getRepository(StepEntity).find({ where: { runId }, order: { step: 'ASC' } });
    return rows.map(toStepRow);
  }

  /**
   * The run's group table (replay's `groupTable`): groups in (step, prompt) order, members in sample order,
   * advantages recomputed from the recorded rewards of the kept rollouts. `step` / `groupId` / `dropped` narrow it.
   */
  async groupTable(runId: string, opts: { step?: number; groupId?: string; dropped?: 'all_equal' | 'timeout' } = {}): Promise<GroupRow[]> {
    const where = {
      runId, ...(opts.step !== undefined ? { step: opts.step } : {}), ...(opts.groupId !== undefined ? { groupId: opts.groupId } : {}),
      ...(opts.dropped !== undefined ? { groupDropped: opts.dropped } : {}),
    };
    const groups = await this.ds.getRepository(GroupEntity).find({ where, order: { step: 'ASC', promptIdx: 'ASC', groupId: 'ASC' } });
    if (!groups.length) return [];
    const members = await this.ds.getRepository(RolloutEntity).find({ where: { groupId: In(groups.map((g) => g.groupId)) } });
    const byGroup = new Map<string, RolloutEntity[]>();
    for (const r of members) byGroup.set(r.groupId, [...(byGroup.get(r.groupId) ?? []), r]);
    return groups.map((g) => toGroupRow(g, (byGroup.get(g.groupId) ?? []).sort(bySample)));
  }

  /** One run's rollouts in id order, paged with `after` (see {@link RolloutQuery}). */
  async rollouts(runId: string, q: RolloutQuery = {}): Promise<RolloutView[]> {
    const qb = this.ds.getRepository(RolloutEntity).createQueryBuilder('r').where('r.run_id = :runId', { runId });
    if (q.step !== undefined) qb.andWhere('r.step = :step', { step: q.step });
    if (q.groupId !== undefined) qb.andWhere('r.group_id = :groupId', { groupId: q.groupId });
    if (q.after !== undefined) qb.andWhere('r.rollout_id > :after', { after: q.after });
    const rows = await qb.orderBy('r.rollout_id', 'ASC').take(checkLimit(q.limit, 100)).getMany();
    const groups = await this.ds.getRepository(GroupEntity).find({ where: { groupId: In([...new Set(rows.map((r) => r.groupId))]) } });
    const kept = new Map(groups.filter((g) => g.resampled).map((g) => [g.groupId, new Set(g.kept ?? [])]));
    return rows.map((r) => toRolloutView(r, kept.get(r.groupId)));
  }

  /** One rollout, or null. */
  async rollout(rolloutId: string): Promise<RolloutView | null> {
    const r = await this.ds.getRepository(RolloutEntity).findOneBy({ rolloutId });
    if (!r) return null;
    const g = await this.ds.getRepository(GroupEntity).findOneBy({ groupId: r.groupId });
    return toRolloutView(r, g?.resampled ? new Set(g.kept ?? []) : undefined);
  }

  /** A rollout's tool calls in (turn, call id) order. */
  async toolCalls(rolloutId: string): Promise<ToolCallView[]> {
    const rows = await this.ds.getRepository(ToolCallEntity).find({ where: { rolloutId }, order: { turn: 'ASC', callId: 'ASC' } });
    return rows.map(({ runId: _r, requested: _q, completed: _c, ...v }) => v);
  }
}

function checkLimit(limit: number | undefined, dflt: number): number {
  const l = limit ?? dflt;
  if (!Number.isInteger(l) || l < 1 || l > 10_000) throw new RangeError(`"limit" must be an integer in 1..10000, got ${limit}`);
  return l;
}

const bySample = (a: RolloutEntity, b: RolloutEntity) => a.sampleIdx - b.sampleIdx || (a.rolloutId < b.rolloutId ? -1 : 1);

function toRolloutView(r: RolloutEntity, kept: Set<string> | undefined): RolloutView {
  return {
    rolloutId: r.rolloutId, groupId: r.groupId, step: r.step, promptIdx: r.promptIdx, sampleIdx: r.sampleIdx, promptId: r.promptId,
    status: r.reward !== null ? 'graded' : r.completed ? 'completed' : 'requested',
    policyVersion: r.policyVersion, engineId: r.engineId, turns: r.turns, toolCalls: r.toolCalls, toolErrors: r.toolErrors,
    answerBlocks: r.answerBlocks, formatViolations: r.formatViolations, responseTokens: r.responseTokens, modelTokens: r.modelTokens,
    truncated: r.truncated, finishReason: r.finishReason, reward: r.reward, correct: r.correct, rule: r.rule, extracted: r.extracted,
    resample: !kept ? 'pending' : kept.has(r.rolloutId) ? 'kept' : 'dropped',
  };
}
