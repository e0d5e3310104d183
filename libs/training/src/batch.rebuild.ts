import { RstarError } from '@rstar/contracts';
import type { RstarEvent } from '@rstar/contracts';
import { buildTrainingBatch, type BatchGroup, type TrainingBatch } from '@rstar/grpo';

/** A step whose batch cannot be rebuilt from the log (an event is missing). */
export class BatchRebuildError extends RstarError {
  declare readonly field: string;
  constructor(message: string, field: string) {
    super('batch_rebuild_failed', message, field);
  }
}

/**
 * Rebuild the training batch of one RL step from a run's events alone (docs/design/architecture.md §1 replay): the
 * step's groups in prompt order (`StepStarted.promptIds`, then any extra groups of dynamic sampling), each group's kept rollouts in
 * `GroupResampled.kept` order with their rewards, less the rollouts optimization left out as stale
 * (`RolloutDiscarded`, async runs), and each rollout's tokens, logprobs and loss mask
 * from `RolloutCompleted`, through `@rstar/grpo`'s `buildTrainingBatch` — the same inputs the
 * optimization service used. Its `hash` equals the step's `StepOptimized.batchHash` when the log is
 * complete. @throws BatchRebuildError naming the missing event.
 */
export function rebuildStepBatch(events: readonly RstarEvent[], step: number): TrainingBatch {
  const started = events.find((e): e is RstarEvent<'StepStarted'> => e.type === 'StepStarted' && e.data.step === step);
  if (!started) throw new BatchRebuildError(`no StepStarted for step ${step}`, 'StepStarted');
  const resampled = new Map<string, RstarEvent<'GroupResampled'>>();
  const completed = new Map<string, RstarEvent<'RolloutCompleted'>>();
  const discarded = new Set<string>();
  const groupOrder: string[] = [];
  for (const e of events) {
    if (e.type === 'GroupResampled' && e.data.step === step) resampled.set(e.data.groupId, e as RstarEvent<'GroupResampled'>);
    else if (e.type === 'RolloutCompleted' && e.data.step === step) completed.set(e.data.rolloutId, e as RstarEvent<'RolloutCompleted'>);
    else if (e.type === 'RolloutRequested' && e.data.step === step && e.data.sampleIdx === 0) groupOrder[e.data.promptIdx] = e.data.groupId;
    else if (e.type === 'RolloutDiscarded' && e.data.step === step) discarded.add(e.data.rolloutId);
  }
  // Groups past the StepStarted prompts are the extra groups of dynamic sampling (roc.maxExtraGroups), in prompt order too.
  const prompts = started.data.promptIds.length;
  if (groupOrder.length < prompts || groupOrder.some((g) => !g)) {
    throw new BatchRebuildError(`step ${step} has ${prompts} prompts but ${groupOrder.filter(Boolean).length} requested groups in the log`, 'RolloutRequested');
  }
  const groups: BatchGroup[] = [];
  for (const groupId of groupOrder) {
    const g = resampled.get(groupId);
    if (!g) throw new BatchRebuildError(`no GroupResampled for ${groupId}`, 'GroupResampled');
    // A stale rollout never entered the batch (the step driver's discardStale; replay's batch check agrees).
    const kept = g.data.kept.filter((id) => !discarded.has(id));
    if (kept.length === 0) continue;
    groups.push({
      groupId,
      rollouts: kept.map((id) => {
        const r = completed.get(id);
        if (!r) throw new BatchRebuildError(`no RolloutCompleted for kept rollout ${id}`, 'RolloutCompleted');
        return { rolloutId: id, reward: g.data.rewards[id], promptTokenIds: r.data.promptTokenIds, responseTokenIds: r.data.responseTokenIds, logprobs: r.data.logprobs, lossMask: r.data.lossMask };
      }),
    });
  }
  return buildTrainingBatch(groups);
}
