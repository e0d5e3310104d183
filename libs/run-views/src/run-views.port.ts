import type {
  Page, ReplayView, RolloutBrief, RolloutDetailView, RunDetailView, RunListItem, RunLiveUpdate, SandboxStatsView, StepDetailView,
} from './views';

/** Which rollouts a list shows. */
export type RolloutOutcome = 'all' | 'correct' | 'wrong' | 'kept' | 'dropped' | 'tool-error' | 'truncated';

/** Query of the run-wide rollouts list. */
export interface RolloutQuery {
  step?: number;
  outcome?: RolloutOutcome;
  offset: number;
  limit: number;
}

/**
 * The port the dashboard reads runs through (control-plane's `/v1/views` controllers, the live feed).
 * Every method is a read of the archive; none changes it. Implementations: {@link EventStoreRunViews}
 * over the event archive and libs/replay's projections; a read-model implementation (runs, steps,
 * groups, rollouts, tool_calls tables) can replace it without touching the pages.
 *
 * Errors: {@link RunViewNotFoundError} (code `not_found`) for an unknown run, step or rollout;
 * {@link RunViewQueryError} (code `invalid_query`) for a bad argument, naming it. Step numbers are 0-based.
 */
export interface RunViewReader {
  /** Runs, newest first (at most `limit`). */
  listRuns(opts: { limit: number }): Promise<RunListItem[]>;
  /** One run: summary, config, stage spans, one metrics row per step, held-out evaluations, reruns. */
  run(runId: string): Promise<RunDetailView>;
  /** One step: its row, its groups (rewards, RoC penalties, kept/dropped, advantages) and its rollouts. */
  step(runId: string, step: number): Promise<StepDetailView>;
  /** The run's graded rollouts, in (step, prompt, sample) order, filtered and paged. */
  rollouts(runId: string, q: RolloutQuery): Promise<Page<RolloutBrief>>;
  /** One rollout: transcript (turns, code, tool output, reward and rule, engine, policy version) and tokens. */
  rollout(runId: string, rolloutId: string): Promise<RolloutDetailView>;
  /** `verify` (no re-execution; of `step` only when given) and the comparison of every recorded rerun. */
  replay(runId: string, opts: { step?: number }): Promise<ReplayView>;
  /** Tool-call statistics of the run. */
  sandbox(runId: string): Promise<SandboxStatsView>;
  /**
   * What changed since `cursor` (from {@link RunDetailView.cursor} or the previous update); null when
   * nothing was archived since.
   */
  changes(runId: string, cursor: string): Promise<RunLiveUpdate | null>;
}
