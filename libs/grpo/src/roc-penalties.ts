import { GrpoInputError, requireCount } from './errors';

/** The per-rollout counters RoC scores (from `RolloutCompleted`). */
export interface RolloutCounters {
  /** Tool calls made (including ones whose JSON did not decode). */
  toolCalls: number;
  /** Erroneous tool calls: status not `ok` or undecodable JSON (docs/design/protocol.md §3). */
  toolErrors: number;
  /** Complete `<answer>...</answer>` blocks written. */
  answerBlocks: number;
  /** Assistant turns. */
  turns: number;
}

/** RoC penalties of one rollout, each in [0, 1]. */
export interface RocPenalties {
  pErr: number;
  pFormat: number;
}

/**
 * The GRPO-RoC penalties of one rollout (rStar2-Agent §3.2, docs/design/protocol.md §5):
 * - `pErr` = toolErrors / toolCalls, and 0.5 when the rollout made no tool call;
 * - `pFormat` = 1 without a complete answer block, else `min(1, (answerBlocks - 1) / turns)`.
 * Throws {@link GrpoInputError} for a negative or fractional count, or toolErrors > toolCalls.
 */
export function rocPenalties(r: RolloutCounters): RocPenalties {
  const calls = requireCount(r.toolCalls, 'toolCalls');
  const errors = requireCount(r.toolErrors, 'toolErrors');
  const answers = requireCount(r.answerBlocks, 'answerBlocks');
  const turns = requireCount(r.turns, 'turns');
  if (errors > calls) {
    throw new GrpoInputError(`toolErrors (${errors}) cannot exceed toolCalls (${calls})`, 'toolErrors');
  }
  const pErr = calls === 0 ? 0.5 : errors / calls;
  // An answer block needs an assistant turn; a zero turn count with answers is bad input upstream, so
  // count it as one turn instead of dividing by zero.
  const pFormat = answers === 0 ? 1 : Math.min(1, (answers - 1) / Math.max(1, turns));
  return { pErr, pFormat };
}
