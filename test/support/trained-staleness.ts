import type { RstarEvent } from '@rstar/contracts';

/** One rollout that entered a step's batch, with how many policy versions behind the trainer it was. */
export interface TrainedRollout {
  rolloutId: string;
  step: number;
  /** The policy version that sampled the rollout's first token (`RolloutCompleted.policyVersion`). */
  startedAt: number;
  /** The trainer's version the step's update was computed from (`StepOptimized.newPolicyVersion - 1`). */
  trainedAt: number;
  /** `trainedAt - startedAt`, in policy versions. */
  staleness: number;
}

/**
 * Re-derives, from a run's log alone (not from the step driver's or replay's own bookkeeping), which
 * rollouts entered each optimized step's batch and how stale each was: a group's kept rollouts
 * (`GroupResampled.kept`) minus those with a `RolloutDiscarded`, for every step with a `StepOptimized`.
 * `entered` counts the batches each rollout entered (1 for every rollout of a correct run).
 * A kept rollout with no `RolloutCompleted` in the log has `startedAt` NaN (so any bound check on it fails).
 */
export function trainedStaleness(events: readonly RstarEvent[]): { trained: TrainedRollout[]; entered: Map<string, number> } {
  const startedAt = new Map(events.flatMap((e) => (e.type === 'RolloutCompleted' ? [[e.data.rolloutId, e.data.policyVersion] as const] : [])));
  const discarded = new Set(events.flatMap((e) => (e.type === 'RolloutDiscarded' ? [e.data.rolloutId] : [])));
  const trainedAt = new Map(events.flatMap((e) => (e.type === 'StepOptimized' ? [[e.data.step, e.data.newPolicyVersion - 1] as const] : [])));
  const trained: TrainedRollout[] = [];
  const entered = new Map<string, number>();
  for (const e of events) {
    if (e.type !== 'GroupResampled') continue;
    const at = trainedAt.get(e.data.step);
    if (at === undefined) continue;
    for (const id of e.data.kept) {
      if (discarded.has(id)) continue;
      const started = startedAt.get(id) ?? Number.NaN;
      trained.push({ rolloutId: id, step: e.data.step, startedAt: started, trainedAt: at, staleness: at - started });
      entered.set(id, (entered.get(id) ?? 0) + 1);
    }
  }
  return { trained, entered };
}
