import { describe, expect, it } from 'vitest';
import { makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { buildTrainingBatch } from '@rstar/grpo';
import { createRegrader } from '@rstar/replay';
import { generateSyntheticRun } from '@rstar/testing';
import { rebuildStepBatch } from './batch.rebuild';

describe('rebuildStepBatch: the batch of a step from the log alone', () => {
  it('given a recorded step, then the rebuilt batch hashes to StepOptimized.batchHash; given a RolloutDiscarded (async, stale), then that rollout is left out as the step driver left it out', async () => {
    const events = await generateSyntheticRun({ runId: 'rb', seed: 4, steps: 1, promptsPerStep: 3, samples: 4, keep: 2, responseChars: 0, grade: createRegrader() });
    const optimized = events.find((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized');
    expect(optimized, 'the synthetic step trains (a group with unequal rewards)').toBeDefined();
    if (!optimized) return;
    const full = rebuildStepBatch(events, 0);
    expect(full.hash).toBe(optimized.data.batchHash);
    const stale = full.sequences[0].rolloutId;
    const g = events.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.kept.includes(stale))!;
    const discarded = makeEvent('RolloutDiscarded', {
      runId: 'rb', streamId: streams.rollout(stale), key: stale, producer: 'optimization',
      data: { rolloutId: stale, groupId: g.data.groupId, step: 0, reason: 'stale', policyVersion: 0, trainPolicyVersion: 2, staleness: 2, maxStaleness: 1 },
    });
    const rebuilt = rebuildStepBatch([...events, discarded], 0);
    expect(rebuilt.sequences.map((q) => q.rolloutId)).not.toContain(stale);
    expect(rebuilt.sequences).toHaveLength(full.sequences.length - 1);
    expect(rebuilt.hash).not.toBe(full.hash);
    // The same batch as one built from the kept rollouts less the discarded one (the group keeps its others).
    const same = buildTrainingBatch(groupsWithout(events, stale));
    expect(rebuilt.hash).toBe(same.hash);
  });
});

/** The step's groups in request order, each with its kept rollouts less `drop`, as the step driver builds them. */
function groupsWithout(events: readonly RstarEvent[], drop: string) {
  const completed = new Map(events.flatMap((e) => (e.type === 'RolloutCompleted' ? [[e.data.rolloutId, e.data] as const] : [])));
  return events
    .filter((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled')
    .map((g) => ({
      groupId: g.data.groupId,
      rollouts: g.data.kept.filter((id) => id !== drop).map((id) => {
        const c = completed.get(id)!;
        return { rolloutId: id, reward: g.data.rewards[id], promptTokenIds: c.promptTokenIds, responseTokenIds: c.responseTokenIds, logprobs: c.logprobs, lossMask: c.lossMask };
      }),
    }))
    .filter((g) => g.rollouts.length > 0);
}
