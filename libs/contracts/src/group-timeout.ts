import type { RunConfig, StageConfig } from './run-config';

/**
 * The per-group time budget's constants (seconds), docs/operations.md "Group time budget":
 * - `floorS`: engine prefill, scheduling, grading and the bus hops of a group, plus headroom for a loaded
 *   machine (the first step also pays the engines' and the sandbox's warm-up);
 * - `tokensPerS`: the slowest per-rollout decode rate still counted as healthy. A budget of
 *   `maxResponseTokens` tokens at that rate is the longest a rollout may legitimately generate for
 *   (the 600 s the budget replaced equals 8K tokens at about 14 tokens/s);
 * - `toolFactor`: each of the stage's `maxTurns` turns may run one tool call of up to `tool.timeoutMs`,
 *   waited for twice over (its queue in the sandbox pool, then its run).
 */
export const GROUP_BUDGET = { floorS: 300, tokensPerS: 10, toolFactor: 2 } as const;

/**
 * Seconds the resampler waits for a group of `stage` before recording it as timed out: `roc.groupTimeoutS`
 * when the config sets it (an explicit override), else
 * `floorS + maxResponseTokens / tokensPerS + toolFactor * maxTurns * tool.timeoutMs / 1000` ({@link GROUP_BUDGET}),
 * rounded up to a whole second. The tiny preset's stage 1 (112 tokens, 3 turns, 4 s tool) gets 336 s; a
 * 14B stage (8192 tokens, 10 turns) 1200 s; 12K tokens and 15 turns 1649 s.
 */
export function groupTimeoutBudgetS(config: Pick<RunConfig, 'roc' | 'tool'>, stage: Pick<StageConfig, 'maxResponseTokens' | 'maxTurns'>): number {
  if (config.roc.groupTimeoutS !== undefined) return config.roc.groupTimeoutS;
  const b = GROUP_BUDGET;
  return Math.ceil(b.floorS + stage.maxResponseTokens / b.tokensPerS + (b.toolFactor * stage.maxTurns * config.tool.timeoutMs) / 1000);
}

/** What a timed-out group still waited for (the `timeout` field of `GroupResampled`). */
export interface GroupTimeoutFacts {
  /** The group's budget in seconds. */
  budgetS: number;
  /** Seconds from the group's first event in the resampler to the decision. */
  waitedS: number;
  /** Rollouts expected (2G). */
  expected: number;
  /** Rollouts with both their RolloutCompleted and their RewardAssigned. */
  received: number;
  /** Requested rollouts still missing an event, in sample order. */
  missing: ReadonlyArray<{ rolloutId: string; waitingFor: 'completion' | 'reward' }>;
  /** Expected rollouts whose RolloutRequested the resampler never saw. */
  unseen: number;
}

/**
 * The one-line reason of a group timeout, a pure function of its facts (so `rstar replay verify` re-derives
 * it): `no rewards for 5 of 8 rollouts after 336 s (budget 336 s): 2 without RolloutCompleted [3, 7], ...`.
 */
export function groupTimeoutReason(t: GroupTimeoutFacts): string {
  const tail = (id: string) => id.slice(id.lastIndexOf(':') + 1);
  const part = (what: 'completion' | 'reward', label: string) => {
    const xs = t.missing.filter((m) => m.waitingFor === what).map((m) => tail(m.rolloutId));
    return xs.length ? `${xs.length} without ${label} [${xs.join(', ')}]` : null;
  };
  const parts = [part('completion', 'RolloutCompleted'), part('reward', 'RewardAssigned'), t.unseen ? `${t.unseen} never requested` : null].filter(Boolean);
  return `no rewards for ${t.expected - t.received} of ${t.expected} rollouts after ${t.waitedS} s (budget ${t.budgetS} s): ${parts.join(', ') || 'none missing'}`;
}
