import type { EventData, RstarEvent } from '@rstar/contracts';
import { MixedRunsError, RunNotFoundError } from './errors';

/** A recorded event's data with the id of the event it came from (differences name the event). */
export type Recorded<T> = T & { eventId: string };

/** One tool call of a rollout: its request and its result, as recorded. */
export interface CallRecord {
  callId: string;
  rolloutId: string;
  turn: number;
  requested: Recorded<EventData<'ToolCallRequested'>> | null;
  completed: Recorded<EventData<'ToolCallCompleted'>> | null;
}

/** Everything recorded about one rollout. */
export interface RolloutRecord {
  rolloutId: string;
  groupId: string;
  step: number;
  /** Prompt index within the step (from the request; -1 when only later events are recorded). */
  promptIdx: number;
  sampleIdx: number;
  requested: Recorded<EventData<'RolloutRequested'>> | null;
  /** Turns in turn order. */
  turns: Recorded<EventData<'TurnGenerated'>>[];
  /** Tool calls in (turn, call id) order. */
  calls: CallRecord[];
  completed: Recorded<EventData<'RolloutCompleted'>> | null;
  reward: Recorded<EventData<'RewardAssigned'>> | null;
  /** Left out of its step's batch by optimization (bounded staleness, docs/design/protocol.md §10), or null. */
  discarded: Recorded<EventData<'RolloutDiscarded'>> | null;
}

/** One group (one prompt of one step). */
export interface GroupRecord {
  groupId: string;
  step: number;
  promptIdx: number;
  promptId: string | null;
  /** Rollout ids in sample order. */
  rolloutIds: string[];
  resampled: Recorded<EventData<'GroupResampled'>> | null;
}

/** One step. */
export interface StepRecord {
  step: number;
  started: Recorded<EventData<'StepStarted'>> | null;
  /** Group ids in prompt order (the order the step driver builds its batch in). */
  groupIds: string[];
  optimized: Recorded<EventData<'StepOptimized'>> | null;
  policyUpdated: Recorded<EventData<'PolicyUpdated'>> | null;
  completed: Recorded<EventData<'StepCompleted'>> | null;
}

/** A run's events indexed by aggregate: the input of every projection and of `verifyRun`. */
export interface RunIndex {
  runId: string;
  started: Recorded<EventData<'RunStarted'>> | null;
  finished: { type: 'RunCompleted' | 'RunFailed'; eventId: string; data: EventData<'RunCompleted'> | EventData<'RunFailed'> } | null;
  /** Steps in step order. */
  steps: StepRecord[];
  groups: Map<string, GroupRecord>;
  rollouts: Map<string, RolloutRecord>;
  /** Every PolicyUpdated, in version order. */
  policyUpdates: Recorded<EventData<'PolicyUpdated'>>[];
  /** Event counts by type. */
  counts: Record<string, number>;
  events: number;
}

const tail = (id: string): number => Number(id.slice(id.lastIndexOf(':') + 1));

/**
 * Index one run's events (any order, duplicates by event id ignored) in one pass. `runId` picks the
 * run when the events hold several; without it they must all be of one run.
 * Throws {@link RunNotFoundError} when no event is of the run, {@link MixedRunsError} when `runId` is
 * omitted and several runs are present.
 */
export function indexRun(events: Iterable<RstarEvent>, runId?: string): RunIndex {
  const list = runId === undefined ? [...events] : [...events].filter((e) => e.runId === runId);
  if (runId === undefined) {
    const runs = [...new Set(list.map((e) => e.runId))];
    if (runs.length > 1) throw new MixedRunsError(runs);
    runId = runs[0];
  }
  if (!runId || list.length === 0) throw new RunNotFoundError(runId ?? '(none)');
  const seen = new Set<string>();
  const ix: RunIndex = {
    runId, started: null, finished: null, steps: [], groups: new Map(), rollouts: new Map(), policyUpdates: [], counts: {}, events: 0,
  };
  const steps = new Map<number, StepRecord>();
  const calls = new Map<string, CallRecord>();
  const step = (n: number): StepRecord => {
    let s = steps.get(n);
    if (!s) steps.set(n, (s = { step: n, started: null, groupIds: [], optimized: null, policyUpdated: null, completed: null }));
    return s;
  };
  const rollout = (rolloutId: string, groupId: string, stepNo: number): RolloutRecord => {
    let r = ix.rollouts.get(rolloutId);
    if (!r) {
      r = { rolloutId, groupId, step: stepNo, promptIdx: -1, sampleIdx: tail(rolloutId), requested: null, turns: [], calls: [], completed: null, reward: null, discarded: null };
      ix.rollouts.set(rolloutId, r);
    }
    return r;
  };
  const group = (groupId: string, stepNo: number): GroupRecord => {
    let g = ix.groups.get(groupId);
    if (!g) ix.groups.set(groupId, (g = { groupId, step: stepNo, promptIdx: tail(groupId), promptId: null, rolloutIds: [], resampled: null }));
    return g;
  };
  const call = (callId: string, rolloutId: string, turn: number): CallRecord => {
    let c = calls.get(callId);
    if (!c) calls.set(callId, (c = { callId, rolloutId, turn, requested: null, completed: null }));
    return c;
  };
  const orphanTurns: Recorded<EventData<'TurnGenerated'>>[] = [];

  for (const e of list) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    ix.events++;
    ix.counts[e.type] = (ix.counts[e.type] ?? 0) + 1;
    const rec = <T>(d: T): Recorded<T> => ({ ...d, eventId: e.id });
    switch (e.type) {
      case 'RunStarted': ix.started = rec(e.data); break;
      case 'RunCompleted': case 'RunFailed': ix.finished = { type: e.type, eventId: e.id, data: e.data }; break;
      case 'StepStarted': step(e.data.step).started = rec(e.data); break;
      case 'StepOptimized': step(e.data.step).optimized = rec(e.data); break;
      case 'StepCompleted': step(e.data.step).completed = rec(e.data); break;
      case 'PolicyUpdated': ix.policyUpdates.push(rec(e.data)); break;
      case 'RolloutRequested': {
        const r = rollout(e.data.rolloutId, e.data.groupId, e.data.step);
        r.requested = rec(e.data);
        r.promptIdx = e.data.promptIdx;
        r.sampleIdx = e.data.sampleIdx;
        const g = group(e.data.groupId, e.data.step);
        g.promptIdx = e.data.promptIdx;
        g.promptId = e.data.promptId;
        break;
      }
      case 'TurnGenerated': orphanTurns.push(rec(e.data)); break;
      case 'ToolCallRequested': call(e.data.callId, e.data.rolloutId, e.data.turn).requested = rec(e.data); break;
      case 'ToolCallCompleted': call(e.data.callId, e.data.rolloutId, e.data.turn).completed = rec(e.data); break;
      case 'RolloutCompleted': {
        rollout(e.data.rolloutId, e.data.groupId, e.data.step).completed = rec(e.data);
        group(e.data.groupId, e.data.step).promptId ??= e.data.promptId;
        break;
      }
      case 'RewardAssigned': rollout(e.data.rolloutId, e.data.groupId, e.data.step).reward = rec(e.data); break;
      case 'RolloutDiscarded': rollout(e.data.rolloutId, e.data.groupId, e.data.step).discarded = rec(e.data); break;
      case 'GroupResampled': {
        const g = group(e.data.groupId, e.data.step);
        g.resampled = rec(e.data);
        g.promptId ??= e.data.promptId;
        break;
      }
      default: break;
    }
  }
  // Turns and calls name only their rollout: attach them once every rollout is known.
  for (const t of orphanTurns) ix.rollouts.get(t.rolloutId)?.turns.push(t);
  for (const c of calls.values()) ix.rollouts.get(c.rolloutId)?.calls.push(c);
  for (const r of ix.rollouts.values()) {
    r.turns.sort((a, b) => a.turn - b.turn);
    r.calls.sort((a, b) => a.turn - b.turn || tail(a.callId) - tail(b.callId) || (a.callId < b.callId ? -1 : 1));
    const g = group(r.groupId, r.step);
    g.rolloutIds.push(r.rolloutId);
    if (g.promptIdx < 0 || Number.isNaN(g.promptIdx)) g.promptIdx = r.promptIdx;
  }
  for (const g of ix.groups.values()) {
    g.rolloutIds.sort((a, b) => ix.rollouts.get(a)!.sampleIdx - ix.rollouts.get(b)!.sampleIdx || (a < b ? -1 : 1));
    step(g.step).groupIds.push(g.groupId);
  }
  for (const s of steps.values()) {
    s.groupIds.sort((a, b) => ix.groups.get(a)!.promptIdx - ix.groups.get(b)!.promptIdx || (a < b ? -1 : 1));
  }
  ix.policyUpdates.sort((a, b) => a.version - b.version);
  const byVersion = new Map(ix.policyUpdates.map((p) => [p.version, p]));
  for (const s of steps.values()) if (s.optimized) s.policyUpdated = byVersion.get(s.optimized.newPolicyVersion) ?? null;
  ix.steps = [...steps.values()].sort((a, b) => a.step - b.step);
  return ix;
}

/** The step record of `step`, or undefined. */
export function stepOf(ix: RunIndex, step: number): StepRecord | undefined {
  return ix.steps.find((s) => s.step === step);
}
