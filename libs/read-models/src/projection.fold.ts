import type { RstarEvent } from '@rstar/contracts';
import type { GroupEntity } from './entities/group.entity';
import type { RolloutEntity } from './entities/rollout.entity';
import type { RunEntity } from './entities/run.entity';
import type { StepEntity } from './entities/step.entity';
import type { ToolCallEntity } from './entities/tool-call.entity';
import { ProjectionInconsistentError } from './read-models.errors';

/** An event as the projector reads it from the archive: the envelope (data only for projected types) and its archive time. */
export interface ArchivedEvent {
  /** The parsed event; `data` is null for the types the read models only count (turns, dead letters, ...). */
  event: Pick<RstarEvent, 'id' | 'type' | 'runId'> & Partial<RstarEvent>;
  archivedAt: Date;
}

/** Plain row objects of the five read models (the entities' shapes). */
export type RunState = { [K in keyof RunEntity]: RunEntity[K] };
export type StepState = { [K in keyof StepEntity]: StepEntity[K] };
export type GroupState = { [K in keyof GroupEntity]: GroupEntity[K] };
export type RolloutState = { [K in keyof RolloutEntity]: RolloutEntity[K] };
export type ToolCallState = { [K in keyof ToolCallEntity]: ToolCallEntity[K] };

/** The event types whose data the read models use; every other type is only counted. */
export const PROJECTED_TYPES = [
  'RunStarted', 'RunCompleted', 'RunFailed', 'StepStarted', 'StepOptimized', 'StepCompleted', 'PolicyUpdated',
  'RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'GroupResampled', 'ToolCallRequested', 'ToolCallCompleted',
] as const;

/** The rows a batch touches, keyed like the tables' primary keys (`steps`: `<runId>\u0000<step>`). */
export interface Working {
  runs: Map<string, RunState>;
  steps: Map<string, StepState>;
  groups: Map<string, GroupState>;
  rollouts: Map<string, RolloutState>;
  calls: Map<string, ToolCallState>;
}

/** The keys of the rows a batch of events may touch (what to load before folding). */
export interface BatchKeys {
  runs: Set<string>;
  steps: Array<{ runId: string; step: number }>;
  groups: Set<string>;
  rollouts: Set<string>;
  calls: Set<string>;
}

export const stepKey = (runId: string, step: number): string => `${runId}\u0000${step}`;
const tail = (id: string): number => {
  const n = Number(id.slice(id.lastIndexOf(':') + 1));
  return Number.isInteger(n) ? n : -1;
};

/** Every key the events may touch (rollout and group events also touch their step and run). */
export function batchKeys(events: readonly ArchivedEvent[]): BatchKeys {
  const k: BatchKeys = { runs: new Set(), steps: [], groups: new Set(), rollouts: new Set(), calls: new Set() };
  const steps = new Map<string, { runId: string; step: number }>();
  const step = (runId: string, s: number) => steps.set(stepKey(runId, s), { runId, step: s });
  for (const { event: e } of events) {
    k.runs.add(e.runId);
    const d = e.data as Record<string, any> | null | undefined;
    if (!d) continue;
    switch (e.type) {
      case 'StepStarted': case 'StepOptimized': case 'StepCompleted': step(e.runId, d.step); break;
      case 'RolloutRequested': case 'RolloutCompleted': case 'RewardAssigned':
        k.rollouts.add(d.rolloutId); k.groups.add(d.groupId); step(e.runId, d.step); break;
      case 'GroupResampled': k.groups.add(d.groupId); step(e.runId, d.step); break;
      case 'ToolCallRequested': case 'ToolCallCompleted': k.calls.add(d.callId); k.rollouts.add(d.rolloutId); break;
      default: break;
    }
  }
  k.steps = [...steps.values()];
  return k;
}

/** What a batch changed: the rows to write and the rollouts that became known (their earlier tool calls must be counted). */
export interface FoldResult {
  dirty: { runs: Set<string>; steps: Set<string>; groups: Set<string>; rollouts: Set<string>; calls: Set<string> };
  /** Rollouts created by this batch (a query adds the tool calls recorded for them by earlier batches). */
  newRollouts: Set<string>;
  /** Tool calls created by this batch. */
  newCalls: Set<string>;
}

type Vec = Record<string, number>;
const add = (target: Record<string, any>, delta: Vec, sign: 1 | -1) => {
  for (const [k, v] of Object.entries(delta)) if (v) target[k] = (target[k] as number) + sign * v;
};

/** A rollout's share of its step's counters (PROTOCOL/replay `stepTable` semantics: completion figures count once completed). */
export function rolloutToStep(r: RolloutState): Vec {
  const c = r.completed;
  return {
    rolloutsRequested: r.requested ? 1 : 0,
    rolloutsCompleted: c ? 1 : 0,
    rewards: r.reward !== null ? 1 : 0,
    rewardSum: r.reward ?? 0,
    toolCalls: c ? (r.toolCalls ?? 0) : 0,
    toolErrors: c ? (r.toolErrors ?? 0) : 0,
    responseTokens: c ? (r.responseTokens ?? 0) : 0,
    truncated: c && r.truncated ? 1 : 0,
  };
}

/** A rollout's share of its run's counters. */
export function rolloutToRun(r: RolloutState): Vec {
  return {
    rollouts: 1,
    rolloutsCompleted: r.completed ? 1 : 0,
    rewards: r.reward !== null ? 1 : 0,
    rewardSum: r.reward ?? 0,
    toolCalls: r.callsRecorded,
  };
}

/** A group's share of its step's counters. */
export function groupToStep(g: GroupState): Vec {
  return {
    groups: 1,
    groupsKept: g.resampled && !g.groupDropped ? 1 : 0,
    groupsAllEqual: g.groupDropped === 'all_equal' ? 1 : 0,
    groupsTimedOut: g.groupDropped === 'timeout' ? 1 : 0,
  };
}

/** A step's share of its run's counters. */
export function stepToRun(s: StepState): Vec {
  return { stepsStarted: s.started ? 1 : 0, stepsCompleted: s.completed ? 1 : 0 };
}

function newRun(runId: string, at: Date): RunState {
  return {
    runId, status: 'running', mode: null, seed: null, codeVersion: null, preset: null, config: null, rerunOf: null, resumedFrom: null, error: null,
    stepsStarted: 0, stepsCompleted: 0, rollouts: 0, rolloutsCompleted: 0, toolCalls: 0, rewards: 0, rewardSum: 0, policyVersion: 0,
    events: 0, eventsByType: {}, firstAt: at, lastAt: at, startedAt: null, finishedAt: null,
  };
}

function newStep(runId: string, step: number): StepState {
  return {
    runId, step, stage: null, policyVersion: null, started: false, optimized: false, completed: false, promptCount: null,
    groups: 0, groupsKept: 0, groupsAllEqual: 0, groupsTimedOut: 0, rolloutsRequested: 0, rolloutsCompleted: 0, rewards: 0, rewardSum: 0,
    toolCalls: 0, toolErrors: 0, responseTokens: 0, truncated: 0, loss: null, clipFraction: null, approxKl: null, gradNorm: null,
    advantageMean: null, advantageStd: null, batchHash: null, checkpointHash: null, checkpointUri: null, newPolicyVersion: null,
    metrics: null, startedAt: null, completedAt: null,
  };
}

function newGroup(runId: string, groupId: string, step: number): GroupState {
  return {
    groupId, runId, step, promptIdx: tail(groupId), promptId: null, resampled: false, mode: null, seed: null, received: null, expected: null,
    groupDropped: null, kept: null, dropped: null, penalties: null, resampledRewards: null, timeout: null,
  };
}

function newRollout(runId: string, rolloutId: string, groupId: string, step: number): RolloutState {
  return {
    rolloutId, runId, groupId, step, promptIdx: -1, sampleIdx: tail(rolloutId), promptId: null, requested: false, resampleExpected: null,
    completed: false, policyVersion: null, engineId: null, turns: null, toolCalls: null, toolErrors: null, answerBlocks: null,
    formatViolations: null, responseTokens: null, modelTokens: null, truncated: null, finishReason: null, reward: null, correct: null,
    rule: null, extracted: null, callsRecorded: 0,
  };
}

/**
 * Fold a batch of archived events (archive order) into the rows loaded for it (`w`, mutated), exactly as
 * libs/replay's `indexRun` and its projections see the same events: the last RunStarted/RunCompleted
 * wins, a rollout exists once it has a request, completion or reward, a group once one of its rollouts
 * exists or it is resampled, a step once it has a step event or a group; the prompt id of a rollout is its
 * request's (else its completion's), its policy version its completion's (else its request's).
 * Counters of steps and runs move by each row's contribution before and after the batch, so the fold does
 * not depend on the order in which a rollout's events arrive. Rollouts created here get their tool-call
 * count afterwards ({@link settleToolCalls}). Pure: no I/O.
 */
export function foldEvents(w: Working, events: readonly ArchivedEvent[]): FoldResult {
  const dirty = { runs: new Set<string>(), steps: new Set<string>(), groups: new Set<string>(), rollouts: new Set<string>(), calls: new Set<string>() };
  const newRollouts = new Set<string>();
  const newCalls = new Set<string>();
  const newGroups = new Set<string>();
  const newSteps = new Set<string>();
  // Contributions before the batch, taken when a row is first touched (zero for rows created here).
  const before = { rollouts: new Map<string, [Vec, Vec]>(), groups: new Map<string, Vec>(), steps: new Map<string, Vec>() };

  const run = (runId: string, at: Date): RunState => {
    let r = w.runs.get(runId);
    if (!r) w.runs.set(runId, (r = newRun(runId, at)));
    dirty.runs.add(runId);
    return r;
  };
  const step = (runId: string, n: number): StepState => {
    const k = stepKey(runId, n);
    let s = w.steps.get(k);
    if (!s) {
      w.steps.set(k, (s = newStep(runId, n)));
      newSteps.add(k);
    } else if (!before.steps.has(k) && !newSteps.has(k)) before.steps.set(k, stepToRun(s));
    dirty.steps.add(k);
    return s;
  };
  const group = (runId: string, groupId: string, n: number): GroupState => {
    let g = w.groups.get(groupId);
    if (!g) {
      w.groups.set(groupId, (g = newGroup(runId, groupId, n)));
      newGroups.add(groupId);
    } else if (!before.groups.has(groupId) && !newGroups.has(groupId)) before.groups.set(groupId, groupToStep(g));
    dirty.groups.add(groupId);
    return g;
  };
  const rollout = (runId: string, rolloutId: string, groupId: string, n: number): RolloutState => {
    let r = w.rollouts.get(rolloutId);
    if (!r) {
      w.rollouts.set(rolloutId, (r = newRollout(runId, rolloutId, groupId, n)));
      newRollouts.add(rolloutId);
    } else if (!before.rollouts.has(rolloutId) && !newRollouts.has(rolloutId)) before.rollouts.set(rolloutId, [rolloutToStep(r), rolloutToRun(r)]);
    dirty.rollouts.add(rolloutId);
    // Every rollout belongs to a group (replay: the group is created for each rollout it knows).
    group(runId, groupId, n);
    return r;
  };
  const call = (runId: string, callId: string, rolloutId: string, turn: number): ToolCallState => {
    let c = w.calls.get(callId);
    if (!c) {
      c = {
        callId, runId, rolloutId, turn, tool: null, requested: false, timeoutMs: null, completed: false, status: null, wallMs: null,
        cpuMs: null, exitCode: null, signal: null, truncated: null, sessionReset: null,
      };
      w.calls.set(callId, c);
      newCalls.add(callId);
    }
    dirty.calls.add(callId);
    return c;
  };

  for (const { event, archivedAt } of events) {
    const e = event as RstarEvent;
    const r = run(e.runId, archivedAt);
    r.events += 1;
    r.eventsByType[e.type] = (r.eventsByType[e.type] ?? 0) + 1;
    if (archivedAt < r.firstAt) r.firstAt = archivedAt;
    if (archivedAt > r.lastAt) r.lastAt = archivedAt;
    if (!e.data) continue;
    switch (e.type) {
      case 'RunStarted': {
        const d = e.data;
        const cfg = d.config as { preset?: unknown; name?: unknown };
        Object.assign(r, {
          mode: d.mode, seed: d.seed, codeVersion: d.codeVersion, config: d.config, rerunOf: d.rerunOf, resumedFrom: d.resumedFrom, startedAt: archivedAt,
          preset: typeof cfg?.preset === 'string' ? cfg.preset : typeof cfg?.name === 'string' ? cfg.name : null,
        });
        break;
      }
      case 'RunCompleted': Object.assign(r, { status: 'completed', error: null, finishedAt: archivedAt }); break;
      case 'RunFailed': Object.assign(r, { status: 'failed', error: e.data.error, finishedAt: archivedAt }); break;
      case 'PolicyUpdated': r.policyVersion = Math.max(r.policyVersion, e.data.version); break;
      case 'StepStarted': {
        const s = step(e.runId, e.data.step);
        Object.assign(s, { started: true, stage: e.data.stage, policyVersion: e.data.policyVersion, promptCount: e.data.promptIds.length, startedAt: archivedAt });
        break;
      }
      case 'StepOptimized': {
        const d = e.data;
        Object.assign(step(e.runId, d.step), {
          optimized: true, loss: d.loss, clipFraction: d.clipFraction, approxKl: d.approxKl, gradNorm: d.gradNorm, advantageMean: d.advantageMean,
          advantageStd: d.advantageStd, batchHash: d.batchHash, checkpointHash: d.checkpointHash, checkpointUri: d.checkpointUri, newPolicyVersion: d.newPolicyVersion,
        });
        break;
      }
      case 'StepCompleted': {
        const s = step(e.runId, e.data.step);
        Object.assign(s, { completed: true, metrics: e.data.metrics, completedAt: archivedAt });
        if (!s.started) s.stage = e.data.stage;
        break;
      }
      case 'RolloutRequested': {
        const d = e.data;
        const ro = rollout(e.runId, d.rolloutId, d.groupId, d.step);
        Object.assign(ro, { requested: true, promptIdx: d.promptIdx, sampleIdx: d.sampleIdx, promptId: d.promptId, resampleExpected: d.resample?.expected ?? null });
        if (!ro.completed) ro.policyVersion = d.policyVersion;
        Object.assign(group(e.runId, d.groupId, d.step), { promptIdx: d.promptIdx, promptId: d.promptId });
        break;
      }
      case 'RolloutCompleted': {
        const d = e.data;
        const ro = rollout(e.runId, d.rolloutId, d.groupId, d.step);
        Object.assign(ro, {
          completed: true, policyVersion: d.policyVersion, engineId: d.engineId, turns: d.turns, toolCalls: d.toolCalls, toolErrors: d.toolErrors,
          answerBlocks: d.answerBlocks, formatViolations: d.formatViolations, responseTokens: d.responseTokenIds.length,
          modelTokens: d.lossMask.reduce<number>((a, m) => a + m, 0), truncated: d.truncated, finishReason: d.finishReason,
        });
        if (!ro.requested) ro.promptId = d.promptId;
        const g = group(e.runId, d.groupId, d.step);
        g.promptId ??= d.promptId;
        break;
      }
      case 'RewardAssigned': {
        const d = e.data;
        Object.assign(rollout(e.runId, d.rolloutId, d.groupId, d.step), { reward: d.reward, correct: d.correct, rule: d.rule, extracted: d.extracted });
        break;
      }
      case 'GroupResampled': {
        const d = e.data;
        const g = group(e.runId, d.groupId, d.step);
        Object.assign(g, {
          resampled: true, mode: d.mode, seed: d.seed, received: d.received, expected: d.expected, groupDropped: d.groupDropped,
          kept: d.kept, dropped: d.dropped, penalties: d.penalties, resampledRewards: d.rewards, timeout: d.timeout ?? null,
        });
        g.promptId ??= d.promptId;
        break;
      }
      case 'ToolCallRequested': {
        const d = e.data;
        Object.assign(call(e.runId, d.callId, d.rolloutId, d.turn), { requested: true, tool: d.tool, timeoutMs: d.limits.timeoutMs });
        break;
      }
      case 'ToolCallCompleted': {
        const d = e.data;
        Object.assign(call(e.runId, d.callId, d.rolloutId, d.turn), {
          completed: true, status: d.status, wallMs: d.wallMs, cpuMs: d.cpuMs, exitCode: d.exitCode, signal: d.signal, truncated: d.truncated,
          sessionReset: d.sessionReset,
        });
        break;
      }
      default: break;
    }
  }
  // Steps exist for every group (replay files each group under its step).
  for (const gid of newGroups) {
    const g = w.groups.get(gid)!;
    step(g.runId, g.step);
  }
  return { dirty, newRollouts, newCalls, ...({ before, newGroups, newSteps } as object) } as FoldResult & Internal;
}

interface Internal {
  before: { rollouts: Map<string, [Vec, Vec]>; groups: Map<string, Vec>; steps: Map<string, Vec> };
  newGroups: Set<string>;
  newSteps: Set<string>;
}

/**
 * Finish a fold: count the tool calls of each rollout (`earlier`: calls recorded by earlier batches for
 * the rollouts this batch created, from the `tool_calls` table; plus the calls this batch created), then
 * move the counters of steps and runs by every touched row's contribution after minus before.
 */
export function settleCounters(w: Working, fold: FoldResult, earlier: ReadonlyMap<string, number>): void {
  const f = fold as FoldResult & Internal;
  for (const id of f.newRollouts) w.rollouts.get(id)!.callsRecorded = earlier.get(id) ?? 0;
  for (const cid of f.newCalls) {
    const r = w.rollouts.get(w.calls.get(cid)!.rolloutId);
    if (!r) continue; // not a known rollout (yet): counted when it becomes one
    if (!f.newRollouts.has(r.rolloutId) && !f.before.rollouts.has(r.rolloutId)) f.before.rollouts.set(r.rolloutId, [rolloutToStep(r), rolloutToRun(r)]);
    r.callsRecorded += 1;
    f.dirty.rollouts.add(r.rolloutId);
  }
  const zeroRollout: [Vec, Vec] = [{}, {}];
  for (const id of f.dirty.rollouts) {
    const r = w.rollouts.get(id)!;
    const [bs, br] = f.newRollouts.has(id) ? zeroRollout : (f.before.rollouts.get(id) ?? [rolloutToStep(r), rolloutToRun(r)]);
    const s = w.steps.get(stepKey(r.runId, r.step));
    if (s) {
      add(s, bs, -1);
      add(s, rolloutToStep(r), 1);
      f.dirty.steps.add(stepKey(r.runId, r.step));
    }
    const run = w.runs.get(r.runId)!;
    add(run, br, -1);
    add(run, rolloutToRun(r), 1);
  }
  for (const id of f.dirty.groups) {
    const g = w.groups.get(id)!;
    const s = w.steps.get(stepKey(g.runId, g.step));
    if (!s) throw new ProjectionInconsistentError(`read models: group ${id} of step ${g.step} has no step row loaded (its events name another step)`);
    add(s, f.newGroups.has(id) ? {} : (f.before.groups.get(id) ?? groupToStep(g)), -1);
    add(s, groupToStep(g), 1);
    // The step row changed even when no event of this batch named the step itself (a lone GroupResampled).
    f.dirty.steps.add(stepKey(g.runId, g.step));
  }
  for (const k of f.dirty.steps) {
    const s = w.steps.get(k)!;
    const run = w.runs.get(s.runId)!;
    add(run, f.newSteps.has(k) ? {} : (f.before.steps.get(k) ?? stepToRun(s)), -1);
    add(run, stepToRun(s), 1);
    w.runs.set(s.runId, run);
  }
}
