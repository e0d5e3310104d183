import type { EventData, RstarEvent } from '@rstar/contracts';
import { buildTrainingBatch, resampleGroup, splitByStaleness, type BatchGroup, type GroupRollout, type TrainingBatch } from '@rstar/grpo';
import type { Difference } from './difference';
import { verifyRefill, verifyTimeout } from './group-outcome.verifier';
import { indexRun, type GroupRecord, type RunIndex, type StepRecord } from './run.index';
import { createRegrader, type RegradeFn, type RegradeVerdict } from './reward.regrader';
import { classifyToolOutputDiff, type ToolOutput } from './tool-output.classifier';
import { NotInRunError } from './errors';

export type { Difference, DifferenceKind } from './difference';

/** Re-executes one recorded tool call (a `SandboxPool.execute` adapter). */
export type ToolReexecutor = (call: {
  callId: string;
  code: string;
  input: string;
  timeoutMs: number;
  memoryMb: number;
  /** A fresh session id per replayed rollout session (calls of a session run in their recorded order). */
  session: string | null;
}) => Promise<ToolOutput>;

/** Re-trains one step from the checkpoint at its start; null = that checkpoint is not available. */
export type StepRetrainer = (input: {
  step: number;
  batch: TrainingBatch;
  /** The PolicyUpdated the step's rollouts were sampled from (null for the initial policy, version 0). */
  startCheckpoint: { version: number; checkpointUri: string; checkpointHash: string } | null;
}) => Promise<{ checkpointHash: string } | null>;

/**
 * Re-checks one step's recorded checkpoint without re-training it (a checkpoint written by a trainer whose
 * optimizer state lives outside the checkpoint, e.g. the trainer worker): the batch re-derived from the log
 * must give the recorded batch file, and the checkpoint on disk must hash to the recorded checkpoint hash and
 * match its manifest. Returns each disagreement (empty = all agree), or null when the checkpoint is not
 * available (skipped).
 */
export type CheckpointChecker = (input: {
  step: number;
  batch: TrainingBatch;
  /** The policy version the step was sampled with. */
  startVersion: number;
  optimized: EventData<'StepOptimized'>;
}) => Promise<Array<{ field: string; recorded: unknown; recomputed: unknown; message: string }> | null>;

export interface VerifyOptions {
  /** Re-grader (default: {@link createRegrader} over today's `@rstar/grader`). */
  grade?: RegradeFn;
  /** Set to re-execute every tool call; omitted = no re-execution (`--no-exec`). */
  execute?: ToolReexecutor;
  /** Set to re-train each step and compare the checkpoint hash. */
  retrain?: StepRetrainer;
  /** Set to re-check each step's recorded checkpoint (and batch file) instead of re-training ({@link CheckpointChecker}). */
  checkpoints?: CheckpointChecker;
  /** Only this step. */
  step?: number;
  /** Whether the regrader can decide symbolic checks (recorded rules `sympy`/`timeout` are re-checked only then). */
  symbolic?: boolean;
  /** Rollouts whose tool calls are re-executed in parallel (default 8). */
  concurrency?: number;
  /** The run, when `events` hold several. */
  runId?: string;
}

/** One rollout of an async step (docs/design/protocol.md §8): the version that sampled it and its staleness when the step trained. */
export interface StalenessEntry {
  rolloutId: string;
  policyVersion: number;
  staleness: number;
}

/**
 * Which rollouts entered one step's batch and which were discarded as stale, re-derived from the log:
 * the kept rollouts of the step's groups split by `splitByStaleness` against the trainer's version
 * before the step's update (`trainPolicyVersion`) and the run's η.
 */
export interface StepStaleness {
  step: number;
  trainPolicyVersion: number;
  maxStaleness: number;
  entered: StalenessEntry[];
  discarded: StalenessEntry[];
}

/** What `verify` found. `ok` is true only when no deterministic difference was found. */
export interface VerifyReport {
  runId: string;
  steps: number[];
  checked: { groups: number; rewards: number; toolCalls: number; batches: number; checkpoints: number; rollouts: number };
  skipped: { groups: number; rewards: number; toolCalls: number; batches: number; checkpoints: number };
  differences: Difference[];
  deterministicDifferences: number;
  /** Async runs (η >= 1) and steps with a `RolloutDiscarded`: each step's entered and discarded rollouts with their staleness. */
  staleness: StepStaleness[];
  notes: string[];
  ok: boolean;
  /** Wall time of each check in ms: re-grading, RoC re-decisions, batch rebuilds, re-execution, re-training. */
  timingsMs: { regrade: number; resample: number; batch: number; execute: number; retrain: number };
}

const REPLAY_SESSION = 'replay';
const SYMBOLIC_RULES = new Set(['sympy', 'timeout']);

/**
 * Recompute, with today's code, every deterministic decision recorded in a run's events and report each
 * difference with its cause:
 * - rewards: every final answer re-graded (`grade`); a changed verdict or rule names the rollout, the
 *   old and new verdict and rule;
 * - GRPO-RoC: every resampled group re-decided by `resampleGroup` from its recorded inputs (counters
 *   from RolloutCompleted, rewards as the resampler saw them); seed, penalties, kept and dropped must be
 *   bit-identical (`Object.is`); a timed-out group's record re-derived from its inputs and its reason
 *   ({@link verifyTimeout}); the number of extra groups of dynamic sampling re-derived ({@link verifyRefill});
 * - the training batch: rebuilt with `buildTrainingBatch` from the kept rollouts, groups in prompt
 *   order; hash, advantage mean/std, token and rollout counts must match StepOptimized;
 * - tool outputs (with `execute`): every call re-run, differences classified by
 *   {@link classifyToolOutputDiff};
 * - the checkpoint hash (with `retrain`).
 * Each decision is recomputed from its own recorded inputs, so a difference points at the code that
 * changed rather than cascading downstream. Throws {@link NotInRunError} for an unknown `step`.
 */
export async function verifyRun(events: Iterable<RstarEvent> | RunIndex, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const ix = isIndex(events) ? events : indexRun(events, opts.runId);
  const steps = opts.step === undefined ? ix.steps : ix.steps.filter((s) => s.step === opts.step);
  if (opts.step !== undefined && steps.length === 0) throw new NotInRunError('step', opts.step, ix.runId, ix.steps.map((s) => s.step));
  const report: VerifyReport = {
    runId: ix.runId,
    steps: steps.map((s) => s.step),
    checked: { groups: 0, rewards: 0, toolCalls: 0, batches: 0, checkpoints: 0, rollouts: 0 },
    skipped: { groups: 0, rewards: 0, toolCalls: 0, batches: 0, checkpoints: 0 },
    differences: [],
    deterministicDifferences: 0,
    staleness: [],
    notes: [],
    ok: true,
    timingsMs: { regrade: 0, resample: 0, batch: 0, execute: 0, retrain: 0 },
  };
  const timed = async <T>(k: keyof VerifyReport['timingsMs'], f: () => T | Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await f();
    } finally {
      report.timingsMs[k] += performance.now() - t0;
    }
  };
  const grade = opts.grade ?? createRegrader();
  for (const s of steps) {
    await timed('regrade', () => verifyRewards(ix, s, grade, !!opts.symbolic, report));
    await timed('resample', () => {
      s.groupIds.forEach((gid) => verifyGroup(ix, ix.groups.get(gid)!, report));
      for (const d of verifyRefill(ix, s)) push(report, d);
    });
    await timed('batch', () => verifyStaleness(ix, s, report));
    const batch = await timed('batch', () => verifyBatch(ix, s, report));
    const { execute, retrain } = opts;
    if (execute) await timed('execute', () => verifyToolCalls(ix, s, execute, opts.concurrency ?? 8, report));
    if (retrain && batch && s.optimized) await timed('retrain', () => verifyCheckpoint(ix, s, batch, retrain, report));
    else if (opts.checkpoints && batch && s.optimized) await timed('retrain', () => recheckCheckpoint(s, batch, opts.checkpoints!, report));
    else if (s.optimized) report.skipped.checkpoints++;
  }
  if (!opts.execute) {
    const calls = steps.reduce((n, s) => n + s.groupIds.reduce((m, g) => m + ix.groups.get(g)!.rolloutIds.reduce((k, r) => k + ix.rollouts.get(r)!.calls.length, 0), 0), 0);
    report.skipped.toolCalls += calls;
    if (calls) report.notes.push(`${calls} tool calls not re-executed (--no-exec)`);
  }
  if (report.skipped.checkpoints) report.notes.push(`${report.skipped.checkpoints} checkpoint hashes not re-computed (built-in policy: pass --retrain to re-train each step from its start checkpoint; a step whose start checkpoint was removed stays unchecked)`);
  if (report.skipped.rewards) report.notes.push(`${report.skipped.rewards} rewards not re-graded (symbolic verdicts without a symbolic backend, or RolloutCompleted missing)`);
  report.deterministicDifferences = report.differences.filter((d) => d.deterministic).length;
  report.ok = report.deterministicDifferences === 0;
  return report;
}

function isIndex(x: unknown): x is RunIndex {
  return typeof x === 'object' && x !== null && (x as RunIndex).rollouts instanceof Map;
}

function push(report: VerifyReport, d: Difference): void {
  report.differences.push(d);
}

async function verifyRewards(ix: RunIndex, s: StepRecord, grade: RegradeFn, symbolic: boolean, report: VerifyReport): Promise<void> {
  for (const gid of s.groupIds) {
    for (const rid of ix.groups.get(gid)!.rolloutIds) {
      const r = ix.rollouts.get(rid)!;
      if (r.completed) report.checked.rollouts++;
      const w = r.reward;
      if (!w) continue;
      if (!r.completed || (!symbolic && SYMBOLIC_RULES.has(w.rule))) {
        report.skipped.rewards++;
        continue;
      }
      report.checked.rewards++;
      const got = grade({ rolloutId: rid, responseText: r.completed.responseText, gold: w.gold, truncated: r.completed.truncated, problem: r.completed.problem });
      const v: RegradeVerdict = got instanceof Promise ? await got : got;
      const base = { eventId: w.eventId, step: s.step, groupId: gid, rolloutId: rid, deterministic: true, cause: 'grader_changed' };
      const verdict = (x: { reward: number; correct: boolean; rule: string; extracted: string | null }) =>
        `reward ${x.reward} (${x.correct ? 'correct' : 'wrong'}, rule ${x.rule}, extracted ${JSON.stringify(x.extracted)})`;
      if (v.reward !== w.reward || v.correct !== w.correct) {
        push(report, {
          ...base, kind: 'reward', field: v.reward !== w.reward ? 'reward' : 'correct',
          recorded: { reward: w.reward, correct: w.correct, rule: w.rule, extracted: w.extracted },
          recomputed: { reward: v.reward, correct: v.correct, rule: v.rule, extracted: v.extracted },
          message: `${w.eventId}: rollout ${rid} was ${verdict(w)}, today ${verdict(v)}`,
        });
      } else if (v.rule !== w.rule && !(r.completed.truncated && v.rule === 'truncated')) {
        // A truncated rollout's reward is 0 whatever the grader says; histories recorded before
        // reward-grading labelled every truncated rollout `truncated` carry the grader's rule instead,
        // which names the same decision, so only the reward and correctness of such a rollout are compared.
        push(report, {
          ...base, kind: 'reward_rule', field: 'rule', recorded: w.rule, recomputed: v.rule,
          message: `${w.eventId}.rule: rollout ${rid} keeps reward ${w.reward}, but rule ${w.rule} -> ${v.rule}`,
        });
      }
    }
  }
}

function sameNumber(a: unknown, b: unknown): boolean {
  return Object.is(a, b);
}

function verifyGroup(ix: RunIndex, g: GroupRecord, report: VerifyReport): void {
  const rs = g.resampled;
  if (!rs) return;
  if (rs.groupDropped === 'timeout') {
    const found = verifyTimeout(ix, g);
    if (found === null) report.skipped.groups++;
    else {
      report.checked.groups++;
      for (const d of found) push(report, d);
    }
    return;
  }
  const at = (field: string) => ({ eventId: rs.eventId, field, step: g.step, groupId: g.groupId });
  // The rollouts the resampler decided on: those in its recorded rewards, in sample order.
  const ids = Object.keys(rs.rewards).sort((a, b) => (ix.rollouts.get(a)?.sampleIdx ?? 0) - (ix.rollouts.get(b)?.sampleIdx ?? 0) || (a < b ? -1 : 1));
  const rollouts: GroupRollout[] = [];
  for (const id of ids) {
    const r = ix.rollouts.get(id);
    if (!r?.completed) {
      push(report, { ...at('rewards'), rolloutId: id, kind: 'missing_event', deterministic: true, recorded: null, recomputed: null, cause: 'incomplete_log',
        message: `${rs.eventId}: rollout ${id} was resampled but its RolloutCompleted is not in the log` });
      return;
    }
    if (r.reward && r.reward.reward !== rs.rewards[id]) {
      push(report, { ...at(`rewards.${id}`), rolloutId: id, kind: 'group_inputs', deterministic: true, recorded: rs.rewards[id], recomputed: r.reward.reward, cause: 'inconsistent_log',
        message: `${rs.eventId}.rewards["${id}"] is ${rs.rewards[id]} but ${r.reward.eventId}.reward is ${r.reward.reward}` });
    }
    const c = r.completed;
    rollouts.push({ rolloutId: id, reward: rs.rewards[id], toolCalls: c.toolCalls, toolErrors: c.toolErrors, answerBlocks: c.answerBlocks, turns: c.turns });
  }
  const policy = g.rolloutIds.map((id) => ix.rollouts.get(id)!.requested?.resample).find((p) => p !== undefined);
  const runSeed = policy?.runSeed ?? ix.started?.seed;
  if (runSeed === undefined) {
    report.skipped.groups++;
    report.notes.push(`${rs.eventId}: not re-decided (no run seed: neither RolloutRequested.resample nor RunStarted is in the log)`);
    return;
  }
  const G = policy?.keep ?? (rs.kept.length || Math.max(1, Math.floor(rs.received / 2)));
  report.checked.groups++;
  let r: ReturnType<typeof resampleGroup>;
  try {
    r = resampleGroup({ groupId: g.groupId, rollouts, G, mode: rs.mode, runSeed, step: g.step });
  } catch (e) {
    push(report, { ...at('kept'), kind: 'roc_selection', deterministic: true, recorded: rs.kept, recomputed: null, cause: 'resampler_rejects_inputs',
      message: `${rs.eventId}: today's resampleGroup rejects the recorded inputs: ${(e as Error).message}` });
    return;
  }
  const cause = 'resampler_changed';
  if (r.seed !== rs.seed) {
    push(report, { ...at('seed'), kind: 'roc_seed', deterministic: true, recorded: rs.seed, recomputed: r.seed, cause, message: `${rs.eventId}.seed: ${rs.seed} -> ${r.seed}` });
  }
  if (r.groupDropped !== rs.groupDropped) {
    push(report, { ...at('groupDropped'), kind: 'group_dropped', deterministic: true, recorded: rs.groupDropped, recomputed: r.groupDropped, cause,
      message: `${rs.eventId}.groupDropped: ${rs.groupDropped} -> ${r.groupDropped}` });
  }
  for (const f of ['kept', 'dropped'] as const) {
    const a = rs[f];
    const b = r[f];
    if (a.length !== b.length || a.some((x, i) => x !== b[i])) {
      push(report, { ...at(f), kind: 'roc_selection', deterministic: true, recorded: a, recomputed: b, cause,
        message: `${rs.eventId}.${f}: recorded [${a.map(short).join(', ')}], today [${b.map(short).join(', ')}]` });
    }
  }
  const recPen = new Map(rs.penalties.map((p, i) => [p.rolloutId, { ...p, i }]));
  for (const p of r.penalties) {
    const q = recPen.get(p.rolloutId);
    for (const f of ['pErr', 'pFormat'] as const) {
      if (!q || !sameNumber(q[f], p[f])) {
        push(report, { ...at(`penalties.${q?.i ?? '?'}.${f}`), rolloutId: p.rolloutId, kind: 'roc_penalties', deterministic: true, recorded: q?.[f] ?? null, recomputed: p[f], cause,
          message: `${rs.eventId}.penalties[${q?.i ?? '?'}].${f} (rollout ${p.rolloutId}): ${q?.[f] ?? 'missing'} -> ${p[f]}` });
      }
    }
  }
}

/** The run's η: `async.maxStaleness` of its recorded config (0 when absent or not recorded). */
function maxStalenessOfRun(ix: RunIndex): number {
  const a = (ix.started?.config as { async?: { maxStaleness?: unknown } } | undefined)?.async;
  return typeof a?.maxStaleness === 'number' ? a.maxStaleness : 0;
}

/**
 * Bounded staleness of one step (docs/design/protocol.md §8), re-decided from the log: the trainer's
 * version before the step's update (StepOptimized.newPolicyVersion - 1; for a step that trained nothing,
 * StepCompleted's policyVersion), each kept rollout's RolloutCompleted.policyVersion and the run's η go
 * through `splitByStaleness`; the stale ones must be exactly the recorded `RolloutDiscarded` (with the same
 * staleness), and no rollout that entered the batch may be staler than η. Synchronous runs without a
 * discard are not listed.
 */
function verifyStaleness(ix: RunIndex, s: StepRecord, report: VerifyReport): void {
  const eta = maxStalenessOfRun(ix);
  const kept = s.groupIds.flatMap((gid) => ix.groups.get(gid)!.resampled?.kept ?? []).map((id) => ix.rollouts.get(id)!).filter((r) => r?.completed);
  const recorded = kept.filter((r) => r.discarded);
  if (eta === 0 && recorded.length === 0) return;
  const metricVersion = s.completed?.metrics.policyVersion;
  const trainVersion = s.optimized ? s.optimized.newPolicyVersion - 1 : recorded[0]?.discarded?.trainPolicyVersion ?? (typeof metricVersion === 'number' ? metricVersion : null);
  if (trainVersion === null) return; // the step has not trained yet
  const split = splitByStaleness(kept.map((r) => ({ rolloutId: r.rolloutId, policyVersion: r.completed!.policyVersion })), trainVersion, eta);
  report.staleness.push({ step: s.step, trainPolicyVersion: trainVersion, maxStaleness: eta, entered: split.fresh, discarded: split.stale });
  const stale = new Map(split.stale.map((v) => [v.rolloutId, v]));
  const base = { kind: 'staleness' as const, deterministic: true, step: s.step, cause: 'staleness_changed' };
  for (const v of split.stale) {
    const r = ix.rollouts.get(v.rolloutId)!;
    const d = r.discarded;
    if (!d) {
      push(report, { ...base, eventId: r.completed!.eventId, field: 'policyVersion', groupId: r.groupId, rolloutId: v.rolloutId, recorded: null, recomputed: v.staleness,
        message: `rollout ${v.rolloutId} sampled under policy version ${v.policyVersion} is ${v.staleness} versions behind the trainer's ${trainVersion} at step ${s.step} (η = ${eta}) but has no RolloutDiscarded: it was trained stale` });
    } else if (d.staleness !== v.staleness || d.trainPolicyVersion !== trainVersion) {
      push(report, { ...base, eventId: d.eventId, field: 'staleness', groupId: r.groupId, rolloutId: v.rolloutId, recorded: d.staleness, recomputed: v.staleness,
        message: `${d.eventId}.staleness: ${d.staleness} (trainer at ${d.trainPolicyVersion}) -> ${v.staleness} (trainer at ${trainVersion})` });
    }
  }
  for (const r of recorded) {
    if (stale.has(r.rolloutId)) continue;
    push(report, { ...base, eventId: r.discarded!.eventId, field: 'reason', groupId: r.groupId, rolloutId: r.rolloutId, recorded: r.discarded!.reason, recomputed: null,
      message: `${r.discarded!.eventId}: rollout ${r.rolloutId} was discarded as stale, but at staleness ${trainVersion - r.completed!.policyVersion} it is within η = ${eta}` });
  }
}

function short(id: string): string {
  return id.split(':').slice(-2).join(':');
}

function verifyBatch(ix: RunIndex, s: StepRecord, report: VerifyReport): TrainingBatch | null {
  const o = s.optimized;
  if (!o) return null;
  const at = (field: string) => ({ eventId: o.eventId, field, step: s.step });
  const groups: BatchGroup[] = [];
  for (const gid of s.groupIds) {
    const rs = ix.groups.get(gid)!.resampled;
    if (!rs || rs.kept.length === 0) continue;
    const rollouts = [];
    // A kept rollout optimization discarded as stale never entered the batch (verifyStaleness checks that decision).
    for (const id of rs.kept.filter((k) => !ix.rollouts.get(k)?.discarded)) {
      const c = ix.rollouts.get(id)?.completed;
      if (!c) {
        report.skipped.batches++;
        push(report, { ...at('batchHash'), rolloutId: id, kind: 'missing_event', deterministic: true, recorded: o.batchHash, recomputed: null, cause: 'incomplete_log',
          message: `${o.eventId}: the batch cannot be rebuilt: kept rollout ${id} has no RolloutCompleted in the log` });
        return null;
      }
      rollouts.push({ rolloutId: id, reward: rs.rewards[id], promptTokenIds: c.promptTokenIds, responseTokenIds: c.responseTokenIds, logprobs: c.logprobs, lossMask: c.lossMask });
    }
    if (rollouts.length) groups.push({ groupId: gid, rollouts });
  }
  report.checked.batches++;
  const batch = buildTrainingBatch(groups);
  const checks: Array<[string, unknown, unknown]> = [
    ['batchHash', o.batchHash, batch.hash],
    ['advantageMean', o.advantageMean, batch.advantageMean],
    ['advantageStd', o.advantageStd, batch.advantageStd],
    ['tokens', o.tokens, batch.tokens],
    ['rollouts', o.rollouts, batch.sequences.length],
  ];
  for (const [field, rec, now] of checks) {
    if (sameNumber(rec, now)) continue;
    push(report, { ...at(field), kind: 'batch', deterministic: true, recorded: rec, recomputed: now, cause: 'batch_builder_changed',
      message: `${o.eventId}.${field}: ${String(rec)} -> ${String(now)} (training batch rebuilt from the kept rollouts with today's advantages and batch builder)` });
  }
  return batch;
}

async function verifyCheckpoint(ix: RunIndex, s: StepRecord, batch: TrainingBatch, retrain: StepRetrainer, report: VerifyReport): Promise<void> {
  const o = s.optimized!;
  // The trainer's version before the update (an async step's rollouts were requested at an older one, StepStarted's).
  const version = o.newPolicyVersion - 1;
  const start = version === 0 ? null : (ix.policyUpdates.find((p) => p.version === version) ?? undefined);
  if (start === undefined) {
    report.skipped.checkpoints++;
    return;
  }
  const got = await retrain({ step: s.step, batch, startCheckpoint: start && { version: start.version, checkpointUri: start.checkpointUri, checkpointHash: start.checkpointHash } });
  if (!got) {
    report.skipped.checkpoints++;
    return;
  }
  report.checked.checkpoints++;
  if (got.checkpointHash !== o.checkpointHash) {
    push(report, { eventId: o.eventId, field: 'checkpointHash', step: s.step, kind: 'checkpoint_hash', deterministic: true, recorded: o.checkpointHash, recomputed: got.checkpointHash,
      cause: 'trainer_changed', message: `${o.eventId}.checkpointHash: ${o.checkpointHash} -> ${got.checkpointHash} (re-trained from the checkpoint of policy version ${version})` });
  }
}

async function recheckCheckpoint(s: StepRecord, batch: TrainingBatch, check: CheckpointChecker, report: VerifyReport): Promise<void> {
  const o = s.optimized!;
  const { eventId: _id, ...optimized } = o;
  const found = await check({ step: s.step, batch, startVersion: o.newPolicyVersion - 1, optimized });
  if (!found) {
    report.skipped.checkpoints++;
    return;
  }
  report.checked.checkpoints++;
  for (const f of found) {
    push(report, { eventId: o.eventId, field: f.field, step: s.step, kind: f.field === 'batchFileHash' ? 'batch' : 'checkpoint_hash', deterministic: true, recorded: f.recorded, recomputed: f.recomputed, cause: 'checkpoint_changed', message: `${o.eventId}.${f.field}: ${f.message}` });
  }
}

async function verifyToolCalls(ix: RunIndex, s: StepRecord, execute: ToolReexecutor, concurrency: number, report: VerifyReport): Promise<void> {
  const rollouts = s.groupIds.flatMap((g) => ix.groups.get(g)!.rolloutIds).map((id) => ix.rollouts.get(id)!).filter((r) => r.calls.length > 0);
  let next = 0;
  const worker = async () => {
    while (next < rollouts.length) {
      const r = rollouts[next++];
      // Calls of a rollout run in their recorded order: a stateful session depends on the earlier cells.
      for (const c of r.calls) {
        const q = c.requested;
        const done = c.completed;
        if (!q || !done) {
          report.skipped.toolCalls++;
          continue;
        }
        report.checked.toolCalls++;
        let out: ToolOutput;
        try {
          out = await execute({
            callId: c.callId, code: q.code, input: q.input, timeoutMs: q.limits.timeoutMs, memoryMb: q.limits.memoryMb,
            session: q.session === null ? null : `${REPLAY_SESSION}:${process.pid}:${q.session}`,
          });
        } catch (e) {
          out = { status: 'sandbox_error', stdout: '', stderr: (e as Error).message, truncated: false };
        }
        const diff = classifyToolOutputDiff(q.code, { status: done.status, stdout: done.stdout, stderr: done.stderr, truncated: done.truncated }, out);
        if (!diff) continue;
        const f = diff.fields[0];
        push(report, {
          eventId: done.eventId, field: f, step: s.step, groupId: r.groupId, rolloutId: r.rolloutId, callId: c.callId, kind: 'tool_output',
          deterministic: diff.deterministic, recorded: done[f], recomputed: out[f], cause: diff.cause,
          message: `${done.eventId}.${diff.fields.join('/')}: ${diff.cause} (${diff.reason})` +
            (diff.excerpt ? `; at char ${diff.excerpt.at} of ${diff.excerpt.field}: recorded ${JSON.stringify(diff.excerpt.recorded)}, today ${JSON.stringify(diff.excerpt.replayed)}` : ''),
        });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, rollouts.length)) }, worker));
}
