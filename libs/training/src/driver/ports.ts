import type { RstarEvent } from '@rstar/contracts';
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

/** What one optimizer step reports (PROTOCOL §6 metrics). */
export interface TrainStepMetrics {
  /** Token-mean clipped loss. */
  loss: number;
  clipFraction: number;
  approxKl: number;
  /** Mean token entropy (nats), or null when the trainer does not compute it. */
  entropy: number | null;
  /** Global gradient norm before clipping. */
  gradNorm: number;
}

/**
 * The trainer port: `builtin` (libs/policy, TensorFlow.js) or `external` (a GPU trainer speaking the
 * batch protocol of services/optimization/README.md).
 */
export interface Trainer {
  /** Policy version of the current weights; `trainStep` increments it by one. */
  readonly version: number;
  /** One optimizer step on the batch (PROTOCOL §6). */
  trainStep(batch: TrainingBatch): Promise<TrainStepMetrics>;
  /** Write a checkpoint of the current weights under `dir`; returns its uri and content hash. */
  save(dir: string): Promise<{ uri: string; hash: string }>;
}

/** One inference engine's weight update (SGLang `/update_weights_from_disk`, the built-in engine, ...). */
export interface WeightSync {
  readonly engineId: string;
  updateWeights(update: { version: number; checkpointUri: string; checkpointHash: string }): Promise<void>;
}

/** Read access to one run's archived events (for resume). */
export interface RunEventSource {
  /** Every event of the run, in log order. */
  readRun(runId: string): Promise<readonly RstarEvent[]>;
}
