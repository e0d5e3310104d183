import { resolve } from 'node:path';
import type { TrainingBatch } from '@rstar/grpo';
import type { PolicyModel, Trainer as PolicyTrainer } from '@rstar/policy';
import type { Trainer, TrainStepMetrics } from './ports';

/**
 * The `builtin` trainer: the {@link Trainer} port over libs/policy's TensorFlow.js `Trainer.grpoStep`
 * (docs/design/protocol.md §6 loss, AdamW). The batch's per-token arrays already follow libs/policy's alignment (entry t
 * concerns token t predicted from tokens < t). Checkpoints are directories written by `PolicyModel.save`;
 * their uri is the absolute directory path, which the built-in engine loads with `loadWeightsFrom`.
 */
export class BuiltinTrainer implements Trainer {
  version: number;

  /** `initialVersion`: the policy version of the model's current weights (the resumed PolicyUpdated's). */
  constructor(
    private readonly model: PolicyModel,
    private readonly trainer: PolicyTrainer,
    initialVersion = 0,
  ) {
    this.version = initialVersion;
  }

  async trainStep(batch: TrainingBatch): Promise<TrainStepMetrics> {
    const m = this.trainer.grpoStep({
      tokenIds: batch.sequences.map((s) => s.tokenIds),
      lossMask: batch.sequences.map((s) => s.lossMask),
      oldLogprobs: batch.sequences.map((s) => s.oldLogprobs),
      advantages: batch.sequences.map((s) => s.advantage),
    });
    this.version++;
    return { loss: m.loss, clipFraction: m.clipFraction, approxKl: m.approxKl, entropy: m.entropy, gradNorm: m.gradNorm, ...(m.tis ? { tis: m.tis } : {}) };
  }

  async save(dir: string): Promise<{ uri: string; hash: string }> {
    const r = this.model.save(dir, { policyVersion: this.version });
    return { uri: resolve(r.dir), hash: r.hash };
  }
}
