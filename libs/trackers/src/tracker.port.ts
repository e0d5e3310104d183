import { RstarError } from '@rstar/contracts';

/** The run a tracker logs (from its `RunStarted`). */
export interface TrackedRun {
  runId: string;
  /** Display name (the config's `name`). */
  name: string;
  config: Record<string, unknown>;
  seed: number;
  codeVersion: string;
  mode: 'standalone' | 'distributed';
}

/** One sampled rollout for the trackers' rollout table. */
export interface RolloutSample {
  step: number;
  rolloutId: string;
  promptId: string;
  reward: number;
  correct: boolean;
  rule: string;
  toolCalls: number;
  toolErrors: number;
  responseTokens: number;
  /** The rollout's response (model text and tool responses), cut to a few thousand characters. */
  response: string;
}

/**
 * A sink of a run's metrics in an experiment tracker (MLflow, Weights & Biases). Calls come in order:
 * `start`, then any number of `logStep`/`logEvaluation`/`logRollouts`, then `finish`. A sink's errors
 * are {@link TrackerError}s; the feed reports them and keeps the run going.
 */
export interface TrackerSink {
  readonly name: string;
  start(run: TrackedRun): Promise<void>;
  /** The step's metrics (null values are not logged). `at`: epoch ms of the StepCompleted. */
  logStep(step: number, stage: string, metrics: Record<string, number | null>, at: number): Promise<void>;
  /** A held-out evaluation: metric `heldOut/<name>/passAt1` at step `afterStep`. */
  logEvaluation(e: { name: string; afterStep: number; passAt1: number; prompts: number; samples: number }, at: number): Promise<void>;
  /** Sampled rollouts of a step, appended to the run's rollout table. */
  logRollouts(step: number, rows: readonly RolloutSample[]): Promise<void>;
  finish(status: 'completed' | 'failed'): Promise<void>;
}

/**
 * A tracker that cannot be reached (`tracker_unreachable`), refuses a call (`tracker_rejected`) or is not
 * installed (`tracker_unavailable`); the message names the tracker, the call and the fix, `field` the
 * run-config setting.
 */
export class TrackerError extends RstarError {
  constructor(
    code: 'tracker_unreachable' | 'tracker_rejected' | 'tracker_unavailable',
    readonly tracker: string,
    message: string,
    field: string,
  ) {
    super(code, `${tracker}: ${message}`, field);
  }
}
