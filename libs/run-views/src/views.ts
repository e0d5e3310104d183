/**
 * The JSON shapes the dashboard pages read (`GET /v1/views/...` on control-plane). Type-only: the
 * front-end imports these with `import type`, so this file must not import runtime code.
 * Times are ISO-8601 strings (the producer's `recordedAt`), durations milliseconds, rates 0..1.
 */
import type { GroupRow, RolloutTranscript, RerunComparison, StepRow, VerifyReport } from '@rstar/replay';
import type { ChainReport } from '@rstar/event-store';

export type { Difference, GroupMemberRow, GroupRow, RerunComparison, RerunRolloutComparison, RolloutTranscript, StepRow, TranscriptToolCall, TranscriptTurn, VerifyReport } from '@rstar/replay';

export type RunStatus = 'running' | 'completed' | 'failed';

/** One page of a long list; `total` counts every item the filter matches. */
export interface Page<T> {
  items: T[];
  offset: number;
  limit: number;
  total: number;
}

/** One run in the runs list. */
export interface RunListItem {
  runId: string;
  status: RunStatus;
  /** The run config's `name` (the preset's name for presets), or its `preset` field. */
  preset: string | null;
  mode: 'standalone' | 'distributed' | null;
  seed: number | null;
  codeVersion: string | null;
  /** Stage of the latest started step. */
  stage: string | null;
  /** Latest started step (0-based, as in the CSV and `rstar replay show`), or null before the first. */
  step: number | null;
  /** Steps the config plans (sum of `stages[].steps`), when the config says. */
  totalSteps: number | null;
  stepsCompleted: number;
  /** Mean reward and pass rate of the latest completed step. */
  lastReward: number | null;
  lastPassRate: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  rerunOf: { runId: string; step: number } | null;
}

/** One step's metrics row (the run page's curves and step table). */
export interface StepMetricsRow {
  step: number;
  stage: string | null;
  status: 'running' | 'optimized' | 'completed';
  /** Policy version the step's rollouts were sampled from. */
  policyVersion: number | null;
  prompts: number | null;
  /** Every metric of `StepCompleted` (rewardMean, passRate, toolErrorRatioPositive, loss, approxKl, timeStepMs, ...); the trainer's from `StepOptimized` where it lacks them. */
  metrics: Record<string, number | null>;
  /** From `StepOptimized`: advantages, tokens and hashes of the batch. */
  optimized: { loss: number; clipFraction: number; approxKl: number | null; entropy: number | null; gradNorm: number; advantageMean: number; advantageStd: number; tokens: number; rollouts: number; batchHash: string; newPolicyVersion: number } | null;
  startedAt: string | null;
  completedAt: string | null;
}

/** A held-out evaluation (`EvaluationCompleted`). */
export interface EvaluationPoint {
  name: string;
  /** RL steps done before it (0 = before RL): drawn at x = afterStep - 0.5 between steps. */
  afterStep: number;
  policyVersion: number;
  passAt1: number;
  prompts: number;
  samples: number;
  at: string | null;
}

/** A stage's span of steps (the charts' stage markers). */
export interface StageSpan {
  name: string;
  firstStep: number;
  lastStep: number;
}

/** The run page. */
export interface RunDetailView {
  run: RunListItem;
  config: Record<string, unknown> | null;
  stages: StageSpan[];
  steps: StepMetricsRow[];
  evaluations: EvaluationPoint[];
  /** Ids of runs that re-ran a step of this one (`rstar replay rerun`). */
  reruns: Array<{ runId: string; step: number }>;
  /** Position in the archive the view was read at: the live feed continues from here. */
  cursor: string;
}

/** One rollout in a list (step page, run-wide rollouts list, live updates). */
export interface RolloutBrief {
  rolloutId: string;
  groupId: string;
  step: number;
  promptIdx: number;
  sampleIdx: number;
  promptId: string | null;
  reward: number | null;
  correct: boolean | null;
  rule: string | null;
  /** From `RolloutCompleted` (null while it runs or in lists that skip it). */
  toolCalls: number | null;
  toolErrors: number | null;
  responseTokens: number | null;
  truncated: boolean | null;
  finishReason: string | null;
  /** The policy version it started under (`RolloutCompleted`), null while it runs or in lists that skip it. */
  policyVersion: number | null;
  /**
   * Every policy version that sampled its tokens, ascending (`TurnGenerated.segments` of a partial rollout,
   * docs/design/protocol.md §8); `[policyVersion]` for a rollout sampled under one version; null where
   * `policyVersion` is.
   */
  policyVersions: number[] | null;
  /**
   * The trainer's version when its step trained (for a discarded rollout, the one it was discarded at);
   * null before the step is optimized or in lists that skip it.
   */
  trainedAt: number | null;
  /** Versions it lagged the trainer when its step trained, `trainedAt - policyVersion` (docs/design/protocol.md §10); null with `trainedAt`. */
  staleness: number | null;
  /** Left out of the batch as stale (`RolloutDiscarded`). */
  discarded: boolean;
  status: 'kept' | 'dropped' | 'pending';
}

/** The step page: its row, its groups (rewards, RoC penalties, kept/dropped, advantages) and rollouts. */
export interface StepDetailView {
  runId: string;
  step: StepRow;
  metrics: StepMetricsRow | null;
  groups: GroupRow[];
  /** Every rollout of the step with its counters, in (prompt, sample) order. */
  rollouts: RolloutBrief[];
}

/** One response token of a rollout (the token-level view). */
export interface TokenCell {
  id: number;
  /** Decoded text of this token, or null when the run's tokenizer is not known here. */
  text: string | null;
  /** 1 = model token (trained on), 0 = tool-response token (masked out of the loss). */
  mask: 0 | 1;
  /** Sampling logprob (0 for tool-response tokens). */
  logprob: number;
}

/** The rollout page. */
export interface RolloutDetailView {
  runId: string;
  transcript: RolloutTranscript;
  /** Advantage within its group when kept. */
  advantage: number | null;
  tokens: {
    /** `char` when the built-in char tokenizer decodes the recorded ids back to the recorded text; null otherwise. */
    tokenizer: 'char' | null;
    promptTokens: number;
    response: TokenCell[];
  } | null;
}

/** The replay page: `rstar replay verify` (without re-execution) and the comparisons of recorded reruns. */
export interface ReplayView {
  runId: string;
  verify: {
    report: VerifyReport;
    /** The archive's hash chain of the run (`EventStore.verifyChain`). */
    chain: ChainReport;
    /** The lines `rstar replay verify RUN --no-exec` prints for an archived run, in order. */
    lines: string[];
    /** Only this step was verified (large runs are verified a step at a time). */
    step: number | null;
  };
  reruns: Array<{ runId: string; step: number; comparison: RerunComparison | null; lines: string[]; error: string | null }>;
}

/** The sandbox page: tool calls over time, status mix, latency percentiles. */
export interface SandboxStatsView {
  runId: string;
  calls: number;
  byStatus: Record<string, number>;
  latencyMs: { p50: number | null; p90: number | null; p99: number | null; max: number | null; mean: number | null };
  /**
   * Calls and failed calls (status other than `ok`) per bucket of `bucketS` seconds of producer time
   * (`ToolCallCompleted.meta.recordedAt`), oldest first; calls per second = calls / bucketS.
   */
  timeline: { bucketS: number; points: Array<{ t: string; calls: number; errors: number }> };
}

/** What the live feed sends for a run (one server-sent event per batch of newly archived events). */
export interface RunLiveUpdate {
  runId: string;
  cursor: string;
  run: RunListItem;
  /** Steps that started, were optimized or completed since the last update. */
  steps: StepMetricsRow[];
  /** Rollouts graded since the last update (capped: `rolloutsDropped` counts the rest). */
  rollouts: RolloutBrief[];
  rolloutsDropped: number;
  evaluations: EvaluationPoint[];
  toolCalls: number;
}
