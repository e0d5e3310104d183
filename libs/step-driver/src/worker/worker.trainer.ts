import { mkdirSync, renameSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { RunConfig } from '@rstar/contracts';
import { writeBatchV2, type TrainingBatch } from '@rstar/grpo';
import { stageOf } from '../driver/step.plan';
import type { Trainer, TrainStepContext, TrainStepMetrics } from '../driver/ports';
import { TrainerResultError, type StepRequest, type StepResult, type TrainerWorkerClient } from '@rstar/workers';

/** Options of {@link WorkerTrainer}. */
export interface WorkerTrainerOptions {
  client: TrainerWorkerClient;
  /** The run id on the worker (its steps, versions and checkpoints are kept under it). */
  workerRunId: string;
  /** Shared directory the worker can read: batches go to `<batchDir>/<workerRunId>/step-<n>.safetensors`. */
  batchDir: string;
  /** `grpo` (docs/design/protocol.md §6 PPO-clip) or `sft` (cross-entropy on the loss-mask tokens). */
  mode: 'grpo' | 'sft';
  /** Policy version of the worker run's current weights (0 at the start). */
  initialVersion: number;
  /** Model directory the worker run's first version is (default: the worker's `--model`). */
  initFrom?: string | null;
  /** The step's `loss` object (docs/design/protocol.md §6 constants, TIS, temperature). */
  loss: (step: number) => Record<string, unknown>;
  /** The step's `optimizer` object (AdamW, warm-up, mini/micro-batches). */
  optimizer: (step: number) => Record<string, unknown>;
  /** How long one step may take, in ms. */
  stepTimeoutMs: number;
  /** The step's `checkpoints` object ({@link workerCheckpoints}); absent or undefined = not sent. */
  checkpoints?: (step: number) => StepRequest['checkpoints'];
}

/**
 * The `worker` trainer: the {@link Trainer} port over the PyTorch trainer worker (workers/trainer). Per step
 * it writes the batch as a v2 safetensors file (`writeBatchV2`, written atomically into the shared batch
 * directory; the same batch always gives the same bytes and hash), PUTs the step and long-polls its
 * `rstar.grpo-result/1` result. The worker trains each (run, step) once and writes the checkpoint itself
 * (a Hugging Face directory with a sha256 manifest), so `save` returns that checkpoint. Idempotent across
 * a restart of the caller: the same step with the same batch returns the stored result.
 */
export class WorkerTrainer implements Trainer {
  version: number;
  /** The last step's result (its checkpoint is what `save` returns). */
  last: StepResult | null = null;

  constructor(private readonly o: WorkerTrainerOptions) {
    this.version = o.initialVersion;
  }

  /**
   * Train `batch` as step `ctx.step` of the worker run. @throws the client's typed errors
   * (TrainerStepConflictError, BatchHashMismatchError, TrainerStepRejectedError, ...), GrpoInputError for a
   * batch that cannot be written.
   */
  async trainStep(batch: TrainingBatch, ctx?: TrainStepContext): Promise<TrainStepMetrics> {
    if (!ctx) throw new TrainerResultError('the worker trainer needs the step of each batch (trainStep(batch, { runId, step }))', 'step');
    const step = ctx.step;
    const file = writeBatchV2(batch, { runId: this.o.workerRunId, step, policyVersion: this.version });
    const uri = this.writeFile(step, file.bytes, file.batchHash);
    const checkpoints = this.o.checkpoints?.(step);
    const r = await this.o.client.trainStep(
      this.o.workerRunId, step,
      {
        batchUri: uri, batchHash: file.batchHash, policyVersion: this.version, mode: this.o.mode, loss: this.o.loss(step), optimizer: this.o.optimizer(step), initFrom: this.o.initFrom ?? null,
        ...(checkpoints ? { checkpoints } : {}),
      },
      this.o.stepTimeoutMs,
    );
    this.last = r;
    this.version = r.newPolicyVersion;
    return {
      loss: r.loss, clipFraction: r.clipFraction ?? 0, approxKl: r.approxKl ?? 0, entropy: r.entropy, gradNorm: r.gradNorm,
      dualClipFraction: r.dualClipFraction, updates: r.updates, lr: r.lr, logprobDrift: r.logprobDrift, tis: r.tis, batchFileHash: file.batchHash,
    };
  }

  /** The checkpoint the worker wrote for the last step (`dir` is not used: the worker chose its place). */
  async save(_dir: string): Promise<{ uri: string; hash: string }> {
    if (!this.last) throw new TrainerResultError('no step has been trained yet, so there is no checkpoint', 'checkpoint');
    return { uri: this.last.checkpoint.uri, hash: this.last.checkpoint.hash };
  }

  /** Write the batch file once (temp + rename); a file with the same bytes already there is kept. */
  private writeFile(step: number, bytes: Buffer, hash: string): string {
    const dir = resolve(this.o.batchDir, this.o.workerRunId);
    const path = join(dir, `step-${step}.safetensors`);
    if (existsSync(path) && createHash('sha256').update(readFileSync(path)).digest('hex') === hash) return path;
    mkdirSync(dir, { recursive: true });
    const tmp = `${path}.tmp-${process.pid}`;
    writeFileSync(tmp, bytes);
    renameSync(tmp, path);
    return path;
  }
}

/** The `loss` object of a run's RL step (docs/design/protocol.md §6 constants of `trainer`, the stage's sampling temperature). */
export function workerLoss(config: RunConfig, step: number): Record<string, unknown> {
  const t = config.trainer;
  const { stage } = stageOf(config, Math.min(step, config.stages.reduce((a, s) => a + s.steps, 0) - 1));
  return {
    epsLow: t.epsLow, epsHigh: t.epsHigh, dualClip: t.dualClip, logRatioClamp: 20, aggregation: 'token-mean', kl: 0, entropyBonus: 0,
    oldLogprobs: t.oldLogprobs ?? 'engine', tisCap: t.tisCap ?? null, decoupled: t.decoupled ?? false, temperature: stage.temperature > 0 ? stage.temperature : 1,
  };
}

/** The `optimizer` object of a run's RL step: the stage's lr, warm-up, AdamW settings, mini/micro-batches. */
export function workerOptimizer(config: RunConfig, step: number): Record<string, unknown> {
  const t = config.trainer;
  const { stage } = stageOf(config, Math.min(step, config.stages.reduce((a, s) => a + s.steps, 0) - 1));
  return {
    kind: 'adamw', lr: stage.lr, warmupSteps: t.warmupSteps, weightDecay: t.weightDecay, gradClip: t.gradClip, microBatch: t.microBatch,
    microBatchTokens: t.microBatchTokens ?? null, miniBatch: t.miniBatch ?? null, ppoEpochs: t.ppoEpochs ?? 1, gradientCheckpointing: t.gradientCheckpointing ?? false,
  };
}

/**
 * The `checkpoints` object of a run's RL step from `config.checkpoints` (undefined when the config has none:
 * the worker keeps every version in full). `final` marks the run's last step, which always writes a sharded
 * checkpoint and a kept Hugging Face export.
 */
export function workerCheckpoints(config: RunConfig, step: number): StepRequest['checkpoints'] {
  const c = config.checkpoints;
  if (!c) return undefined;
  const total = config.stages.reduce((a, s) => a + s.steps, 0);
  return { every: c.every ?? 1, keepLast: c.keepLast ?? null, exportEvery: c.exportEvery ?? null, final: step === total - 1 };
}
