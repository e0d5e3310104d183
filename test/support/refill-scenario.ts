import { makeEvent, parseRunConfig, streams, type RunConfig } from '@rstar/contracts';
import { clippedLossStats, type TrainingBatch } from '@rstar/grpo';
import { ResamplingHandler } from '@rstar/groups';
import type { EventBus } from '@rstar/messaging';
import { createRegrader } from '@rstar/replay';
import { OptimizationHandler, type PromptSource, type RunSummary, type Trainer } from '@rstar/step-driver';

/**
 * A run built to exercise dynamic sampling and group timeouts on a real bus, with the real resampler and the
 * real step driver. Policy-serving and reward-grading are replaced by scripted answers, the only way to make
 * groups all-equal or slow on purpose. 3 steps of 3 prompts, G = 2, `roc.maxExtraGroups` 2, and a
 * `groupTimeoutS` override of 3 s, so the timeout is quick to wait for:
 * - step 0: prompt 0 all-correct (dropped) -> extra group 3, which keeps: 3 kept groups, as configured;
 * - step 1: prompts 0 and 1 all-correct, extra groups 3 and 4 all-wrong -> the cap of 2 is reached: 1 kept;
 * - step 2: sample 1 of prompt 2 is never answered -> that group times out (never refilled); 2 kept.
 */
export const REFILL_SCENARIO: RunConfig = parseRunConfig({
  name: 'refill-scenario',
  seed: 11,
  roc: { maxExtraGroups: 2, groupTimeoutS: 3 },
  stages: [{ name: 'rl', steps: 3, promptsPerStep: 3, groupSize: 2, maxResponseTokens: 32, lr: 1e-3 }],
});

/** The scripted reward of a rollout, or null for one that is never answered. */
export function scriptedReward(step: number, promptIdx: number, sampleIdx: number): 0 | 1 | null {
  if (step === 0 && promptIdx === 0) return 1;
  if (step === 1 && (promptIdx === 0 || promptIdx === 1)) return 1;
  if (step === 1 && promptIdx >= 3) return 0;
  if (step === 2 && promptIdx === 2 && sampleIdx === 1) return null;
  return sampleIdx % 2 === 0 ? 1 : 0;
}

const PROMPTS: PromptSource = { size: 40, get: (i) => ({ promptId: `task-${i}`, problem: `${i}+${i}`, gold: String(2 * i) }) };

/** A trainer with the reference loss math and no weights (the step driver, not training, is under test). */
class ReferenceTrainer implements Trainer {
  version = 0;
  async trainStep(batch: TrainingBatch) {
    const s = clippedLossStats(batch.sequences.map((q) => ({ logpNew: q.oldLogprobs, logpOld: q.oldLogprobs, mask: q.lossMask, advantage: q.advantage })));
    this.version++;
    return { loss: s.loss, clipFraction: s.clipFraction, approxKl: s.approxKl, entropy: null, gradNorm: 0 };
  }
  async save(dir: string) {
    return { uri: `file://${dir}`, hash: `v${this.version}` };
  }
}

/**
 * Run {@link REFILL_SCENARIO} as `runId` on `bus`: the scripted rollout answers, the resampler (sweeping
 * every 250 ms) and the step driver, each on its own durable consumer named after the run. Resolves with the
 * driver's summary once the run completes; everything it started is stopped.
 */
export async function runRefillScenario(bus: EventBus, runId: string): Promise<RunSummary> {
  const grade = createRegrader();
  const answers = await bus.subscribe({
    durable: `scripted-${runId}`, types: ['RolloutRequested'],
    handler: async (e) => {
      if (e.runId !== runId || e.type !== 'RolloutRequested') return;
      const d = e.data;
      const reward = scriptedReward(d.step, d.promptIdx, d.sampleIdx);
      if (reward === null) return;
      const common = { runId, streamId: streams.rollout(d.rolloutId), key: d.rolloutId, producer: 'test', causedBy: e };
      // A right or a wrong final answer, graded by today's grader (so `replay verify` re-grades it the same).
      const responseText = `<answer>\\boxed{${reward ? d.gold : Number(d.gold) + 1}}</answer>`;
      const v = await grade({ rolloutId: d.rolloutId, responseText, gold: d.gold, truncated: false });
      await bus.publish([
        makeEvent('RolloutCompleted', { ...common, data: {
          rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, promptId: d.promptId, gold: d.gold, engineId: 'scripted', policyVersion: d.policyVersion,
          promptTokenIds: [1, 2], responseTokenIds: [3, 4, 5], logprobs: [-0.5, 0, -0.25], lossMask: [1, 0, 1], responseText,
          turns: 2, toolCalls: 1, toolErrors: d.sampleIdx % 2, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer',
        } }),
        makeEvent('RewardAssigned', { ...common, data: {
          rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, reward: v.reward, correct: v.correct, extracted: v.extracted, gold: d.gold,
          normalizedPrediction: null, normalizedGold: null, rule: v.rule, ms: 0,
        } }),
      ]);
    },
  });
  const resampler = new ResamplingHandler(bus, { durable: `resampling-${runId}`, sweepMs: 250 });
  await resampler.start();
  const driver = new OptimizationHandler(bus, { config: REFILL_SCENARIO, runId, prompts: PROMPTS, trainer: new ReferenceTrainer(), engines: [], checkpointDir: '/tmp/refill-scenario' });
  try {
    return await driver.run();
  } finally {
    await driver.stop();
    await resampler.stop();
    await answers.drain();
  }
}
