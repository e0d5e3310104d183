import { groupAdvantages } from '@rstar/grpo';
import type { GroupMemberRow, GroupRow, RunSummaryView, StepRow } from '@rstar/replay';
import type { GroupEntity } from './entities/group.entity';
import type { RolloutEntity } from './entities/rollout.entity';
import type { RunEntity } from './entities/run.entity';
import type { StepEntity } from './entities/step.entity';

/** A run row as libs/replay's `runSummary` shows it. */
export function toSummary(r: RunEntity): RunSummaryView {
  return {
    runId: r.runId,
    status: r.status,
    mode: r.mode,
    seed: r.seed,
    codeVersion: r.codeVersion,
    preset: r.preset,
    rerunOf: r.rerunOf,
    resumedFrom: r.resumedFrom,
    stepsStarted: r.stepsStarted,
    stepsCompleted: r.stepsCompleted,
    rollouts: r.rollouts,
    rolloutsCompleted: r.rolloutsCompleted,
    toolCalls: r.toolCalls,
    rewardMean: r.rewards ? r.rewardSum / r.rewards : null,
    policyVersion: r.policyVersion,
    error: r.error,
    events: r.events,
    eventsByType: { ...r.eventsByType },
  };
}

/** A step row as libs/replay's `stepTable` shows it. */
export function toStepRow(s: StepEntity): StepRow {
  return {
    step: s.step,
    stage: s.stage,
    policyVersion: s.policyVersion,
    status: s.completed ? 'completed' : s.optimized ? 'optimized' : 'running',
    prompts: s.promptCount ?? s.groups,
    rolloutsRequested: s.rolloutsRequested,
    rolloutsCompleted: s.rolloutsCompleted,
    rewardMean: s.rewards ? s.rewardSum / s.rewards : null,
    groupsKept: s.groupsKept,
    groupsAllEqual: s.groupsAllEqual,
    groupsTimedOut: s.groupsTimedOut,
    toolCalls: s.toolCalls,
    toolErrors: s.toolErrors,
    toolErrorRatio: s.toolCalls ? s.toolErrors / s.toolCalls : null,
    meanResponseTokens: s.rolloutsCompleted ? s.responseTokens / s.rolloutsCompleted : null,
    truncated: s.truncated,
    loss: s.loss,
    clipFraction: s.clipFraction,
    gradNorm: s.gradNorm,
    advantageMean: s.advantageMean,
    advantageStd: s.advantageStd,
    batchHash: s.batchHash,
    checkpointHash: s.checkpointHash,
    newPolicyVersion: s.newPolicyVersion,
  };
}

/** A group row with its rollouts (sample order) as libs/replay's `groupTable` shows it; advantages are recomputed from the kept rewards. */
export function toGroupRow(g: GroupEntity, rollouts: RolloutEntity[]): GroupRow {
  const keptIds = g.kept ?? [];
  const rewards = g.resampledRewards ?? {};
  const adv = groupAdvantages(keptIds.map((id) => rewards[id] ?? 0)).advantages;
  const advOf = new Map(keptIds.map((id, i) => [id, adv[i]]));
  const penOf = new Map((g.penalties ?? []).map((p) => [p.rolloutId, p]));
  const keptSet = new Set(keptIds);
  const members: GroupMemberRow[] = rollouts.map((r) => ({
    rolloutId: r.rolloutId,
    sampleIdx: r.sampleIdx,
    reward: g.resampled ? (rewards[r.rolloutId] ?? r.reward ?? null) : r.reward,
    pErr: penOf.get(r.rolloutId)?.pErr ?? null,
    pFormat: penOf.get(r.rolloutId)?.pFormat ?? null,
    status: !g.resampled ? 'pending' : keptSet.has(r.rolloutId) ? 'kept' : 'dropped',
    advantage: advOf.get(r.rolloutId) ?? null,
  }));
  return {
    groupId: g.groupId,
    step: g.step,
    promptIdx: g.promptIdx,
    promptId: g.promptId,
    mode: g.mode,
    seed: g.seed,
    received: g.received,
    expected: g.expected ?? rollouts.map((r) => r.resampleExpected).find((x) => x !== null) ?? null,
    groupDropped: g.groupDropped,
    timeout: g.timeout ?? null,
    pending: !g.resampled,
    kept: keptIds.length,
    positives: members.filter((m) => (m.reward ?? 0) > 0).length,
    members,
  };
}
