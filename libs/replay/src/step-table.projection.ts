import type { RunIndex } from './run.index';

/** One row of the step table. */
export interface StepRow {
  step: number;
  stage: string | null;
  /** Policy version the step's rollouts were sampled from. */
  policyVersion: number | null;
  status: 'running' | 'optimized' | 'completed';
  prompts: number;
  rolloutsRequested: number;
  rolloutsCompleted: number;
  /** Mean reward over the step's graded rollouts. */
  rewardMean: number | null;
  groupsKept: number;
  groupsAllEqual: number;
  groupsTimedOut: number;
  toolCalls: number;
  toolErrors: number;
  /** Tool errors / tool calls over the step's completed rollouts (null without calls). */
  toolErrorRatio: number | null;
  /** Mean response length in tokens (model + tool-response tokens). */
  meanResponseTokens: number | null;
  truncated: number;
  loss: number | null;
  clipFraction: number | null;
  gradNorm: number | null;
  advantageMean: number | null;
  advantageStd: number | null;
  batchHash: string | null;
  checkpointHash: string | null;
  newPolicyVersion: number | null;
}

/** Project the step table (one row per step, step order) from a run's index (pure). */
export function stepTable(ix: RunIndex): StepRow[] {
  return ix.steps.map((s) => {
    let requested = 0, completed = 0, rewardSum = 0, rewards = 0, calls = 0, errors = 0, tokens = 0, truncated = 0;
    let kept = 0, allEqual = 0, timedOut = 0;
    for (const gid of s.groupIds) {
      const g = ix.groups.get(gid)!;
      const d = g.resampled?.groupDropped;
      if (g.resampled && !d) kept++;
      if (d === 'all_equal') allEqual++;
      if (d === 'timeout') timedOut++;
      for (const rid of g.rolloutIds) {
        const r = ix.rollouts.get(rid)!;
        if (r.requested) requested++;
        if (r.reward) {
          rewardSum += r.reward.reward;
          rewards++;
        }
        const c = r.completed;
        if (!c) continue;
        completed++;
        calls += c.toolCalls;
        errors += c.toolErrors;
        tokens += c.responseTokenIds.length;
        if (c.truncated) truncated++;
      }
    }
    const o = s.optimized;
    return {
      step: s.step,
      stage: s.started?.stage ?? s.completed?.stage ?? null,
      policyVersion: s.started?.policyVersion ?? null,
      status: s.completed ? 'completed' : o ? 'optimized' : 'running',
      prompts: s.started?.promptIds.length ?? s.groupIds.length,
      rolloutsRequested: requested,
      rolloutsCompleted: completed,
      rewardMean: rewards ? rewardSum / rewards : null,
      groupsKept: kept,
      groupsAllEqual: allEqual,
      groupsTimedOut: timedOut,
      toolCalls: calls,
      toolErrors: errors,
      toolErrorRatio: calls ? errors / calls : null,
      meanResponseTokens: completed ? tokens / completed : null,
      truncated,
      loss: o?.loss ?? null,
      clipFraction: o?.clipFraction ?? null,
      gradNorm: o?.gradNorm ?? null,
      advantageMean: o?.advantageMean ?? null,
      advantageStd: o?.advantageStd ?? null,
      batchHash: o?.batchHash ?? null,
      checkpointHash: o?.checkpointHash ?? null,
      newPolicyVersion: o?.newPolicyVersion ?? null,
    };
  });
}
