import type { EventData, RunConfig } from '@rstar/contracts';

/** Progress of a run, by phase (for progress bars and logs). */
export type TrainProgress =
  | { phase: 'sft'; step: number; steps: number; loss: number }
  | { phase: 'sft-traces'; done: number; total: number }
  | { phase: 'eval-before' | 'eval-after'; done: number; total: number }
  | { phase: 'rl'; step: number; steps: number; stage: string; metrics: Record<string, number | null> }
  | { phase: 'message'; text: string };

/** One RL step's record for the report. */
export interface StepRecord {
  step: number;
  stage: string;
  metrics: Record<string, number | null>;
}

/** What the report reads of a held-out pass@1 measurement (the evaluator's report has more, written as it is). */
export interface ReportedPassAt1 {
  /** Mean reward over prompts x samples, in [0, 1]. */
  passAt1: number;
  prompts: number;
}

/**
 * What a finished run returns and its report is written from; `P` is the held-out pass@1 report
 * (@rstar/training's `TrainingResult` is `RunResult<PassAt1Report>`).
 */
export interface RunResult<P extends ReportedPassAt1 = ReportedPassAt1> {
  runId: string;
  outDir: string;
  mode: 'standalone' | 'distributed';
  config: RunConfig;
  /** The SFT stage; `reused`: its checkpoint came from the SFT cache (`seconds` is then the original training time). */
  sft: { steps: number; seconds: number; finalLoss: number; checkpoint: string; reused: boolean } | null;
  passAt1Before: P | null;
  passAt1After: P | null;
  /** Every held-out evaluation, as recorded in `EvaluationCompleted` (before RL at afterStep 0, after the last step). */
  evaluations: Array<EventData<'EvaluationCompleted'>>;
  steps: StepRecord[];
  policyVersion: number;
  /** Seconds per phase and in total. */
  seconds: { sft: number; evalBefore: number; rl: number; evalAfter: number; total: number };
}
