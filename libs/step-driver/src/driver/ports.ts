import type { EventData, RstarEvent, WeightProbeResult } from '@rstar/contracts';
import type { TrainingBatch } from '@rstar/grpo';

/** A training prompt with its gold answer. */
export interface Prompt {
  promptId: string;
  problem: string;
  gold: string;
}

/** Where the step driver draws prompts from: a fixed, indexable pool (dataset or seeded task family). */
export interface PromptSource {
  readonly size: number;
  /** The prompt at `index` (0 <= index < size); the same index always gives the same prompt. */
  get(index: number): Prompt;
}

/** Engine/trainer logprob mismatch measured before an update (on every model token of the batch). */
export interface LogprobDrift {
  tokens: number;
  /** Mean and max |log pi_trainer - log pi_engine|. */
  meanAbs: number;
  maxAbs: number;
  /** k3 estimate of KL(engine || trainer) with r = pi_trainer / pi_engine. */
  mismatchKl: number;
  ratioMin: number;
  ratioMax: number;
}

/** What one optimizer step reports (docs/design/protocol.md §6 metrics). */
export interface TrainStepMetrics {
  /** Token-mean clipped loss. */
  loss: number;
  clipFraction: number;
  approxKl: number;
  /** Mean token entropy (nats), or null when the trainer does not compute it. */
  entropy: number | null;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Share of tokens where the dual clip bound (trainer worker only). */
  dualClipFraction?: number | null;
  /** Optimizer updates of the step: PPO mini-batches x epochs (trainer worker only). */
  updates?: number;
  /** Learning rate of the step after warm-up (trainer worker only). */
  lr?: number;
  logprobDrift?: LogprobDrift | null;
  /** Truncated importance sampling, when on. */
  tis?: { cap: number | null; meanWeight: number; cappedFraction: number } | null;
  /** sha256 of the batch file the trainer read (trainer worker: the safetensors v2 file). */
  batchFileHash?: string;
}

/** Which step a batch belongs to (trainers that keep state per run and step use it; the builtin one ignores it). */
export interface TrainStepContext {
  runId: string;
  step: number;
}

/**
 * The trainer port: `builtin` (libs/policy, TensorFlow.js) or `worker` (the PyTorch trainer worker of
 * workers/trainer over HTTP, {@link WorkerTrainer}).
 */
export interface Trainer {
  /** Policy version of the current weights; `trainStep` increments it by one. */
  readonly version: number;
  /** One optimizer step on the batch (docs/design/protocol.md §6). */
  trainStep(batch: TrainingBatch, ctx?: TrainStepContext): Promise<TrainStepMetrics>;
  /** Write a checkpoint of the current weights under `dir` (or return the one the trainer wrote); its uri and content hash. */
  save(dir: string): Promise<{ uri: string; hash: string }>;
}

/** One inference engine's weight update (SGLang `/update_weights_from_disk`, the built-in engine, ...). */
export interface WeightSync {
  readonly engineId: string;
  updateWeights(update: { version: number; checkpointUri: string; checkpointHash: string }): Promise<void>;
}

/**
 * How a distributed run's new weights reach the engines that policy-serving drives, and how they are
 * checked (docs/design/protocol.md §9). With it, the step driver publishes `PolicyUpdated` (with
 * {@link PolicyDelivery.describe}'s fields) before `StepOptimized`, waits for {@link PolicyDelivery.deliver},
 * and records its probe results in `StepOptimized.weightProbe`.
 */
export interface PolicyDelivery {
  /** The `PolicyUpdated.sync` of `update` made at `step` (the distributed sync's bucket plan), or undefined for the disk path. */
  describe(update: PolicyUpdate, step: number): Promise<EventData<'PolicyUpdated'>['sync']>;
  /**
   * After `PolicyUpdated` is published: send the weights (distributed: the trainer's broadcast, while
   * policy-serving has the engines receive), wait until every engine reports version `update.version`, and
   * score the behaviour probe on each. @returns one result per engine; @throws WeightProbeError naming the
   * engine, the version and the worst token when one differs beyond tolerance.
   */
  deliver(update: PolicyUpdate, sync: EventData<'PolicyUpdated'>['sync']): Promise<WeightProbeResult[]>;
  /**
   * Before a step trains on its rollouts: the engines still serve `version`, the one the step sampled with
   * (the probe again, where this process probed that version before; nothing otherwise). Catches weights
   * loaded behind the run's back, which the next sync would overwrite unseen. @throws WeightProbeError.
   */
  verify(version: number): Promise<void>;
}

/** A policy update as `PolicyUpdated` names it. */
export interface PolicyUpdate {
  version: number;
  checkpointUri: string;
  checkpointHash: string;
}

/** Read access to one run's archived events (for resume). */
export interface RunEventSource {
  /** Every event of the run, in log order. */
  readRun(runId: string): Promise<readonly RstarEvent[]>;
}
