import { EVENT_TYPES, ids as idsOf, streams, type EventType, type RstarEvent } from '@rstar/contracts';
import { decodePosition, encodePosition, type EventStore, type LogPosition } from '@rstar/event-store';
import {
  checkArchiveIntegrity, compareRerun, createRegrader, formatIntegrity, formatRerunComparison, formatVerifyReport, groupTable, indexRun, rolloutTranscript, rolloutVersions,
  stepTable, verifyRun, type RegradeFn, type RunIndex, type TurnVersions,
} from '@rstar/replay';
import { ArchiveQueries, type ArchivedEvent, type RunHeadRow } from './archive.queries';
import { RunViewNotFoundError, RunViewQueryError } from './errors';
import { runListItem } from './run-list.projection';
import type { RolloutQuery, RunViewReader } from './run-views.port';
import { evaluationPoints, stageSpans, stepMetricsRows } from './step-metrics.projection';
import { tokenView } from './token.projection';
import type {
  Page, ReplayView, RolloutBrief, RolloutDetailView, RunDetailView, RunListItem, RunLiveUpdate, SandboxStatsView, StepDetailView,
} from './views';

export interface EventStoreRunViewsOptions {
  /** `replay` verifies a whole run only up to this many rollouts; larger runs one step at a time (default 5000). */
  verifyWholeRunMaxRollouts?: number;
  /** Re-grader of `replay` (default: today's grader, as `rstar replay verify`). */
  grade?: RegradeFn;
  /** Rollouts sent in one live update at most (default 500; the rest are counted). */
  liveRolloutCap?: number;
  /** Events read per live poll at most (default 20000; the next poll goes on). */
  livePageLimit?: number;
}

/** What the run page reads: head events and step events (small, one per step). */
const RUN_TYPES: EventType[] = ['RunStarted', 'RunCompleted', 'RunFailed', 'StepStarted', 'StepOptimized', 'StepCompleted', 'EvaluationCompleted'];
const STEP_TYPES: EventType[] = ['StepStarted', 'StepOptimized', 'StepCompleted'];
/** What the live feed reads (no token-carrying event). */
const LIVE_TYPES: EventType[] = [...RUN_TYPES, 'RewardAssigned', 'GroupResampled', 'ToolCallCompleted'];
/** A rollout stream's events without the turns (the step page and verify without re-execution need no turn). */
const ROLLOUT_TYPES: EventType[] = ['RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'RolloutDiscarded', 'ToolCallRequested', 'ToolCallCompleted'];
/** Samples per prompt probed when a step's group size is not known yet. */
const MAX_SAMPLES = 256;

const tail = (id: string): number => Number(id.slice(id.lastIndexOf(':') + 1));
const after = (a: LogPosition, b: LogPosition): boolean => BigInt(a.txid) > BigInt(b.txid) || (a.txid === b.txid && a.position > b.position);

/**
 * {@link RunViewReader} over the event archive (Postgres or PGlite through its socket), built on
 * libs/replay's projections: `indexRun` over just the events a page needs, then `stepTable`,
 * `groupTable`, `rolloutTranscript` and `verifyRun` (without re-execution). Each page reads by index:
 * the run page the run's step events (`(run_id, type)`), a step page its rollouts and groups by their
 * deterministic event ids (`ids.rollout`, `ids.group`), a rollout page its own stream, the live feed
 * the run's events after a cursor. Nothing is cached: every call reads the archive as it is.
 */
export class EventStoreRunViews implements RunViewReader {
  private readonly q: ArchiveQueries;
  private readonly grade: RegradeFn;

  constructor(private readonly store: EventStore, private readonly opts: EventStoreRunViewsOptions = {}) {
    this.q = new ArchiveQueries(store);
    this.grade = opts.grade ?? createRegrader();
  }

  async listRuns(opts: { limit: number }): Promise<RunListItem[]> {
    const heads = await this.q.runHeads(await this.q.runIds());
    const order = (h: RunHeadRow) => (h.started as ArchivedEvent | null)?.position.position ?? h.firstPosition;
    return heads.sort((a, b) => order(b) - order(a)).slice(0, opts.limit).map(runListItem);
  }

  async run(runId: string): Promise<RunDetailView> {
    // The cursor first: whatever is archived after it reaches the page through the live feed.
    const cursor = await this.q.head(runId);
    const events = await this.q.ofTypes(runId, RUN_TYPES);
    if (events.length === 0 && cursor.position === 0) throw this.noRun(runId);
    const steps = stepMetricsRows(events);
    const started = events.find((e): e is ArchivedEvent & RstarEvent<'RunStarted'> => e.type === 'RunStarted') ?? null;
    return {
      run: runListItem(headOf(runId, events)),
      config: started?.data.config ?? null,
      stages: stageSpans(steps),
      steps,
      evaluations: evaluationPoints(events),
      reruns: await this.rerunsOf(runId),
      cursor: encodePosition(cursor),
    };
  }

  async step(runId: string, step: number): Promise<StepDetailView> {
    const { own, events } = await this.stepEvents(runId, step, ['RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'RolloutDiscarded']);
    const ix = indexRun(events, runId);
    const row = stepTable(ix).find((s) => s.step === step)!;
    const groups = groupTable(ix, { step });
    const metrics = stepMetricsRows(own).find((r) => r.step === step) ?? null;
    // Only a rollout requested with partial rollouts can have turns sampled under a later version (protocol.md §8):
    // the turns of the others are not read.
    const partial = [...ix.rollouts.values()].filter((r) => r.requested?.partialRollouts === true).map((r) => r.rolloutId);
    return { runId, step: row, metrics, groups, rollouts: briefsOf(ix, groups, await this.q.turnVersions(runId, partial)) };
  }

  async rollouts(runId: string, q: RolloutQuery): Promise<Page<RolloutBrief>> {
    if (!['all', 'correct', 'wrong'].includes(q.outcome ?? 'all')) {
      throw new RunViewQueryError('outcome', `the run-wide list filters by all, correct or wrong (got "${q.outcome}"); a step's page filters by every outcome`);
    }
    const where = [`run_id = $1`, `type = 'RewardAssigned'`];
    const params: unknown[] = [runId];
    if (q.step !== undefined) {
      params.push(String(q.step));
      where.push(`data->>'step' = $${params.length}`);
    }
    if (q.outcome === 'correct' || q.outcome === 'wrong') where.push(`(data->>'correct')::boolean = ${q.outcome === 'correct'}`);
    const t = this.q.table;
    const [count] = await this.q.sql(`SELECT count(*)::bigint AS n FROM ${t} WHERE ${where.join(' AND ')}`, params);
    const rows = await this.q.sql(
      `SELECT data FROM ${t} WHERE ${where.join(' AND ')} ORDER BY global_position OFFSET $${params.length + 1} LIMIT $${params.length + 2}`,
      [...params, q.offset, q.limit],
    );
    const rewards = rows.map((r) => r.data as { rolloutId: string; groupId: string; step: number; reward: number; correct: boolean; rule: string });
    const counters = await this.countersOf(runId, rewards.map((r) => r.rolloutId), [...new Set(rewards.map((r) => r.groupId))]);
    const items = rewards.map((r): RolloutBrief => {
      const c = counters.rollouts.get(r.rolloutId);
      const g = counters.groups.get(r.groupId);
      return {
        rolloutId: r.rolloutId, groupId: r.groupId, step: r.step, promptIdx: tail(r.groupId), sampleIdx: tail(r.rolloutId), promptId: c?.promptId ?? null,
        reward: r.reward, correct: r.correct, rule: r.rule,
        toolCalls: c?.toolCalls ?? null, toolErrors: c?.toolErrors ?? null, responseTokens: c?.responseTokens ?? null, truncated: c?.truncated ?? null, finishReason: c?.finishReason ?? null,
        policyVersion: null, policyVersions: null, trainedAt: null, staleness: null, discarded: false,
        status: !g ? 'pending' : g.kept.includes(r.rolloutId) ? 'kept' : 'dropped',
      };
    });
    return { items, offset: q.offset, limit: q.limit, total: Number(count.n) };
  }

  async rollout(runId: string, rolloutId: string): Promise<RolloutDetailView> {
    const own = await this.q.ofStreams(runId, [streams.rollout(rolloutId)]);
    if (own.length === 0) {
      if ((await this.q.head(runId)).position === 0) throw this.noRun(runId);
      throw new RunViewNotFoundError('rollout', rolloutId, `run ${runId} has no rollout with this id (open its step page for the list)`);
    }
    const groupId = own.map((e) => (e.data as { groupId?: string }).groupId).find((g) => g !== undefined);
    const group = groupId ? await this.q.byIds(runId, [`GroupResampled:${groupId}`]) : [];
    const ix = indexRun([...own, ...group], runId);
    const transcript = rolloutTranscript(ix, rolloutId);
    const member = groupTable(ix, { groupId: transcript.groupId })[0]?.members.find((m) => m.rolloutId === rolloutId);
    const completed = ix.rollouts.get(rolloutId)?.completed ?? null;
    return { runId, transcript, advantage: member?.advantage ?? null, tokens: completed ? tokenView(completed) : null };
  }

  async replay(runId: string, opts: { step?: number }): Promise<ReplayView> {
    let events: RstarEvent[];
    if (opts.step !== undefined) {
      events = [...(await this.stepEvents(runId, opts.step, ROLLOUT_TYPES)).events, ...(await this.q.ofTypes(runId, ['RunStarted', 'PolicyUpdated']))];
    } else {
      const rollouts = await this.q.countOf(runId, 'RolloutRequested');
      const max = this.opts.verifyWholeRunMaxRollouts ?? 5000;
      if (rollouts > max) throw new RunViewQueryError('step', `run ${runId} has ${rollouts} rollouts (more than ${max}): verify one step at a time (?step=N)`);
      events = await this.q.ofTypes(runId, allTypesBut([]));
      if (events.length === 0) throw this.noRun(runId);
    }
    const ix = indexRun(events, runId);
    const report = await verifyRun(ix, { step: opts.step, grade: this.grade });
    const reruns: ReplayView['reruns'] = [];
    for (const r of await this.rerunsOf(runId)) {
      try {
        const original = opts.step === r.step ? ix : indexRun((await this.stepEvents(runId, r.step, ROLLOUT_TYPES)).events, runId);
        const rerunEvents = await this.q.ofTypes(r.runId, allTypesBut(['TurnGenerated']));
        const comparison = compareRerun(original, indexRun(rerunEvents, r.runId), r.step);
        reruns.push({ ...r, comparison, lines: formatRerunComparison(comparison).split('\n'), error: null });
      } catch (e) {
        reruns.push({ ...r, comparison: null, lines: [], error: (e as Error).message });
      }
    }
    // The archive's integrity first (hash chain, signed checkpoints), as `rstar replay verify` prints it for an archived run.
    const integrity = await checkArchiveIntegrity(this.store, runId);
    const lines = [...formatIntegrity(integrity).split('\n'), ...formatVerifyReport(report).split('\n')];
    return { runId, verify: { report, chain: integrity.chain, lines, step: opts.step ?? null }, reruns };
  }

  async sandbox(runId: string): Promise<SandboxStatsView> {
    const t = this.q.table;
    const base = `FROM ${t} WHERE run_id = $1 AND type = 'ToolCallCompleted'`;
    const [status, lat, span] = await Promise.all([
      this.q.sql(`SELECT data->>'status' AS status, count(*)::int AS n ${base} GROUP BY 1 ORDER BY 2 DESC`, [runId]),
      this.q.sql(
        `SELECT percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY (data->>'wallMs')::float8) AS p, max((data->>'wallMs')::float8) AS max,
                avg((data->>'wallMs')::float8) AS mean ${base}`,
        [runId],
      ),
      this.q.sql(`SELECT min((meta->>'recordedAt')::timestamptz) AS lo, max((meta->>'recordedAt')::timestamptz) AS hi ${base}`, [runId]),
    ]);
    const calls = status.reduce((a, r) => a + r.n, 0);
    if (calls === 0 && (await this.q.head(runId)).position === 0) throw this.noRun(runId);
    // Buckets: 1 s, or wider so that a long run has at most 300 points.
    const lo = span[0]?.lo ? new Date(span[0].lo).getTime() : 0;
    const hi = span[0]?.hi ? new Date(span[0].hi).getTime() : 0;
    const bucketS = Math.max(1, Math.ceil((hi - lo) / 1000 / 300));
    const points = calls
      ? await this.q.sql(
          `SELECT to_timestamp(floor(extract(epoch FROM (meta->>'recordedAt')::timestamptz) / $2) * $2) AS t, count(*)::int AS calls,
                  count(*) FILTER (WHERE data->>'status' <> 'ok')::int AS errors ${base} GROUP BY 1 ORDER BY 1`,
          [runId, bucketS],
        )
      : [];
    const p = lat[0]?.p as number[] | null;
    const round = (v: unknown) => (v === null || v === undefined ? null : Math.round(Number(v) * 100) / 100);
    return {
      runId, calls,
      byStatus: Object.fromEntries(status.map((r) => [r.status, r.n])),
      latencyMs: { p50: round(p?.[0]), p90: round(p?.[1]), p99: round(p?.[2]), max: round(lat[0]?.max), mean: round(lat[0]?.mean) },
      timeline: { bucketS, points: points.map((r) => ({ t: new Date(r.t).toISOString(), calls: r.calls, errors: r.errors })) },
    };
  }

  async changes(runId: string, cursor: string): Promise<RunLiveUpdate | null> {
    let from: LogPosition;
    try {
      from = decodePosition(cursor, 'cursor');
    } catch (e) {
      throw new RunViewQueryError('cursor', (e as Error).message);
    }
    const upTo = await this.q.head(runId);
    if (!after(upTo, from)) return null;
    const limit = this.opts.livePageLimit ?? 20_000;
    const events = await this.q.between(runId, LIVE_TYPES, from, upTo, limit);
    const next = events.length === limit ? events[events.length - 1].position : upTo;
    const touched = [...new Set(events.filter((e) => STEP_TYPES.includes(e.type)).map((e) => (e.data as { step: number }).step))];
    const stepEvents = (await Promise.all(touched.map((s) => this.q.ofTypesAtStep(runId, STEP_TYPES, s)))).flat();
    const [head] = await this.q.runHeads([runId]);
    const kept = new Map<string, Set<string>>();
    for (const e of events) if (e.type === 'GroupResampled') kept.set(e.data.groupId, new Set(e.data.kept));
    const cap = this.opts.liveRolloutCap ?? 500;
    const graded = events.filter((e): e is ArchivedEvent & RstarEvent<'RewardAssigned'> => e.type === 'RewardAssigned');
    return {
      runId,
      cursor: encodePosition(next),
      run: runListItem(head),
      steps: stepMetricsRows(stepEvents),
      rollouts: graded.slice(-cap).map((e) => {
        const g = kept.get(e.data.groupId);
        return {
          rolloutId: e.data.rolloutId, groupId: e.data.groupId, step: e.data.step, promptIdx: tail(e.data.groupId), sampleIdx: tail(e.data.rolloutId), promptId: null,
          reward: e.data.reward, correct: e.data.correct, rule: e.data.rule, toolCalls: null, toolErrors: null, responseTokens: null, truncated: null, finishReason: null,
          policyVersion: null, policyVersions: null, trainedAt: null, staleness: null, discarded: false,
          status: !g ? 'pending' : g.has(e.data.rolloutId) ? 'kept' : 'dropped',
        };
      }),
      rolloutsDropped: Math.max(0, graded.length - cap),
      evaluations: evaluationPoints(events),
      toolCalls: events.filter((e) => e.type === 'ToolCallCompleted').length,
    };
  }

  // ---- helpers ----

  /**
   * The events of one step: its step events, and by deterministic id its groups' `GroupResampled` and
   * its rollouts' events of `rolloutTypes` (a prompt's samples are probed once, on prompt 0).
   */
  private async stepEvents(runId: string, step: number, rolloutTypes: readonly EventType[]): Promise<{ own: RstarEvent[]; events: RstarEvent[] }> {
    const own = await this.q.ofTypesAtStep(runId, STEP_TYPES, step);
    const started = own.find((e): e is ArchivedEvent & RstarEvent<'StepStarted'> => e.type === 'StepStarted');
    if (!started) {
      if ((await this.q.head(runId)).position === 0) throw this.noRun(runId);
      throw new RunViewNotFoundError('step', String(step), `run ${runId} has no StepStarted for step ${step} (steps are 0-based)`);
    }
    const prompts = started.data.promptIds.length + (await this.extraGroupsOf(runId, step, own, started.data.promptIds.length));
    const probe = await this.q.byIds(runId, Array.from({ length: MAX_SAMPLES }, (_, s) => `RolloutRequested:${idsOf.rollout(runId, step, 0, s)}`));
    const samples = probe.reduce((m, e) => Math.max(m, (e.data as { sampleIdx: number }).sampleIdx + 1), 0);
    const rolloutIds = Array.from({ length: prompts * samples }, (_, i) => idsOf.rollout(runId, step, Math.floor(i / samples), i % samples));
    const groupIds = Array.from({ length: prompts }, (_, p) => `GroupResampled:${idsOf.group(runId, step, p)}`);
    const rollouts = rolloutTypes.some((t) => t.startsWith('ToolCall') || t === 'TurnGenerated')
      ? await this.q.ofStreams(runId, rolloutIds.map((r) => streams.rollout(r)), rolloutTypes)
      : await this.q.byIds(runId, rolloutIds.flatMap((r) => rolloutTypes.map((t) => `${t}:${r}`)));
    const groups = await this.q.byIds(runId, groupIds);
    return { own, events: [...own, ...rollouts, ...groups] };
  }

  /**
   * How many extra groups dynamic sampling asked for in a step (their prompt indices follow the StepStarted
   * prompts): `StepCompleted.metrics.extraGroups` once the step completed; before, probed by id up to the
   * run's `roc.maxExtraGroups`. 0 for a run without dynamic sampling.
   */
  private async extraGroupsOf(runId: string, step: number, own: readonly RstarEvent[], base: number): Promise<number> {
    const done = own.find((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted');
    const recorded = done?.data.metrics.extraGroups;
    if (typeof recorded === 'number') return recorded;
    if (done) return 0;
    const [run] = await this.q.ofTypes(runId, ['RunStarted']);
    const max = ((run?.data as { config?: { roc?: { maxExtraGroups?: number } } } | undefined)?.config?.roc?.maxExtraGroups) ?? 0;
    if (max <= 0) return 0;
    const asked = await this.q.byIds(runId, Array.from({ length: max }, (_, j) => `RolloutRequested:${idsOf.rollout(runId, step, base + j, 0)}`));
    return asked.length;
  }

  /** Light counters of some rollouts (without their tokens) and the kept lists of their groups. */
  private async countersOf(runId: string, rolloutIds: readonly string[], groupIds: readonly string[]) {
    const t = this.q.table;
    const [rs, gs] = await Promise.all([
      rolloutIds.length
        ? this.q.sql(
            `SELECT data->>'rolloutId' AS id, data->>'promptId' AS prompt_id, (data->>'toolCalls')::int AS tool_calls, (data->>'toolErrors')::int AS tool_errors,
                    jsonb_array_length(data->'responseTokenIds') AS tokens, (data->>'truncated')::boolean AS truncated, data->>'finishReason' AS finish
             FROM ${t} WHERE id = ANY($1::text[]) AND run_id = $2`,
            [rolloutIds.map((r) => `RolloutCompleted:${r}`), runId],
          )
        : [],
      groupIds.length ? this.q.sql(`SELECT data->>'groupId' AS id, data->'kept' AS kept FROM ${t} WHERE id = ANY($1::text[]) AND run_id = $2`, [groupIds.map((g) => `GroupResampled:${g}`), runId]) : [],
    ]);
    return {
      rollouts: new Map(rs.map((r) => [r.id as string, { promptId: r.prompt_id as string, toolCalls: r.tool_calls as number, toolErrors: r.tool_errors as number, responseTokens: r.tokens as number, truncated: r.truncated as boolean, finishReason: r.finish as string }])),
      groups: new Map(gs.map((g) => [g.id as string, { kept: g.kept as string[] }])),
    };
  }

  /** Runs that re-ran a step of `runId` (their `RunStarted.rerunOf`), by one index lookup per run. */
  private async rerunsOf(runId: string): Promise<Array<{ runId: string; step: number }>> {
    const t = this.q.table;
    const rows = await this.q.sql(
      `SELECT s.run_id, (s.data->'rerunOf'->>'step')::int AS step FROM unnest($1::text[]) AS r(run_id)
       CROSS JOIN LATERAL (SELECT run_id, data FROM ${t} WHERE run_id = r.run_id AND type = 'RunStarted' LIMIT 1) s
       WHERE s.data->'rerunOf'->>'runId' = $2`,
      [await this.q.runIds(), runId],
    );
    return rows.map((r) => ({ runId: r.run_id, step: r.step }));
  }

  private noRun(runId: string): RunViewNotFoundError {
    return new RunViewNotFoundError('run', runId, 'no event of this run is archived (GET /v1/views/runs lists the runs)');
  }
}

/** Every event type of a run but `skip` (dead letters are not a run's). */
function allTypesBut(skip: readonly EventType[]): EventType[] {
  return EVENT_TYPES.filter((t) => t !== 'DeadLettered' && !skip.includes(t));
}

/** The run's head facts from its run-level events (pure). */
function headOf(runId: string, events: readonly ArchivedEvent[]): RunHeadRow {
  let lastStarted: RstarEvent<'StepStarted'> | null = null;
  let lastCompleted: RstarEvent<'StepCompleted'> | null = null;
  let started: RstarEvent<'RunStarted'> | null = null;
  let finished: RunHeadRow['finished'] = null;
  let completed = 0;
  for (const e of events) {
    if (e.type === 'RunStarted') started ??= e;
    else if (e.type === 'RunCompleted' || e.type === 'RunFailed') finished = e as RunHeadRow['finished'];
    else if (e.type === 'StepStarted' && (!lastStarted || e.data.step > lastStarted.data.step)) lastStarted = e;
    else if (e.type === 'StepCompleted') {
      completed++;
      if (!lastCompleted || e.data.step > lastCompleted.data.step) lastCompleted = e;
    }
  }
  return { runId, started, finished, lastStarted, lastCompleted, stepsCompleted: completed, firstPosition: events[0]?.position.position ?? 0 };
}

/**
 * Every rollout of the indexed step with its counters, in (prompt, sample) order (pure). Its versions
 * (libs/replay `rolloutVersions`): the one it started under, every one that sampled its tokens (from `turns`,
 * the turn versions of its partial rollouts; a rollout missing there has just the one it started under),
 * the trainer's before the step's update and the staleness between them (docs/design/protocol.md §10).
 */
function briefsOf(ix: RunIndex, groups: ReturnType<typeof groupTable>, turns: ReadonlyMap<string, TurnVersions[]>): RolloutBrief[] {
  const optimized = ix.steps.find((s) => s.step === groups[0]?.step)?.optimized;
  const trainVersion = optimized ? optimized.newPolicyVersion - 1 : null;
  return groups.flatMap((g) =>
    g.members.map((m): RolloutBrief => {
      const r = ix.rollouts.get(m.rolloutId)!;
      const c = r.completed;
      const v = c ? rolloutVersions(c.policyVersion, turns.get(m.rolloutId) ?? [], r.discarded?.trainPolicyVersion ?? trainVersion, !!r.discarded) : null;
      return {
        policyVersion: v?.startedAt ?? null,
        policyVersions: v?.versions ?? null,
        trainedAt: v?.trainedAt ?? (r.discarded?.trainPolicyVersion ?? null),
        staleness: v?.staleness ?? (r.discarded?.staleness ?? null),
        discarded: !!r.discarded,
        rolloutId: m.rolloutId, groupId: g.groupId, step: g.step, promptIdx: g.promptIdx, sampleIdx: m.sampleIdx, promptId: g.promptId,
        reward: m.reward, correct: r.reward?.correct ?? null, rule: r.reward?.rule ?? null,
        toolCalls: c?.toolCalls ?? null, toolErrors: c?.toolErrors ?? null, responseTokens: c?.responseTokenIds.length ?? null, truncated: c?.truncated ?? null, finishReason: c?.finishReason ?? null,
        status: m.status,
      };
    }),
  );
}
