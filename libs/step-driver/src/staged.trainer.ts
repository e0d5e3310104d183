import type { RunConfig } from '@rstar/contracts';
import { BuiltinTrainer, stageOf, type Trainer, type TrainStepMetrics } from './driver';
import type { TrainingBatch } from '@rstar/grpo';
import { Trainer as PolicyTrainer, type PolicyModel } from '@rstar/policy';

/**
 * The `builtin` trainer with each RL stage's own learning rate (the run config gives `lr` per stage;
 * docs/design/protocol.md §6: one AdamW step per RL step, warm-up `trainer.warmupSteps`). `beginStep(step)` is called
 * before each step's batch is trained, so the stage of that step sets the rate.
 */
export class StagedBuiltinTrainer implements Trainer {
  private readonly inner: BuiltinTrainer;
  private readonly policyTrainer: PolicyTrainer;

  /** `freshOptimizer`: drop optimizer moments loaded with the weights (an SFT checkpoint's), so RL starts its own warm-up. */
  constructor(
    readonly model: PolicyModel,
    private readonly config: RunConfig,
    initialVersion = 0,
    freshOptimizer = true,
  ) {
    if (freshOptimizer) model.loadedOptimizerState = null;
    const t = config.trainer;
    this.policyTrainer = new PolicyTrainer(model, {
      lr: config.stages[0].lr, warmupSteps: t.warmupSteps, weightDecay: t.weightDecay, gradClip: t.gradClip,
      epsLow: t.epsLow, epsHigh: t.epsHigh, dualClip: t.dualClip, microBatch: t.microBatch,
      decoupled: t.decoupled ?? false, tisCap: t.tisCap ?? null,
    });
    this.inner = new BuiltinTrainer(model, this.policyTrainer, initialVersion);
  }

  get version(): number {
    return this.inner.version;
  }

  /** Set the learning rate of the stage that `step` (0-based global RL step) belongs to. */
  beginStep(step: number): void {
    const { stage } = stageOf(this.config, Math.min(step, this.config.stages.reduce((a, s) => a + s.steps, 0) - 1));
    this.policyTrainer.optimizer.opts.lr = stage.lr;
  }

  trainStep(batch: TrainingBatch): Promise<TrainStepMetrics> {
    return this.inner.trainStep(batch);
  }

  save(dir: string): Promise<{ uri: string; hash: string }> {
    return this.inner.save(dir);
  }
}
