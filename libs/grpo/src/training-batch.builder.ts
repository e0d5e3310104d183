import { createHash } from 'node:crypto';
import { GrpoInputError } from './errors';
import { groupAdvantages } from './advantages';

/** A kept rollout with what training needs (from `RolloutCompleted` + `RewardAssigned`). */
export interface BatchRollout {
  rolloutId: string;
  reward: number;
  promptTokenIds: readonly number[];
  /** Model and tool-response tokens after the prompt. */
  responseTokenIds: readonly number[];
  /** Sampling logprob of each response token (0 for tool-response tokens). */
  logprobs: readonly number[];
  /** 1 = model token, 0 = tool-response token; same length as responseTokenIds. */
  lossMask: readonly number[];
}

/** The kept rollouts of one group (one prompt). */
export interface BatchGroup {
  groupId: string;
  rollouts: readonly BatchRollout[];
}

/** One training sequence: prompt + response, every array of length `tokenIds.length`. */
export interface TrainingSequence {
  rolloutId: string;
  groupId: string;
  tokenIds: number[];
  /** 0 on prompt and tool-response tokens, 1 on model tokens. */
  lossMask: number[];
  /** log pi_old(tokenIds[t] | tokenIds[<t]) at the model positions, 0 elsewhere. */
  oldLogprobs: number[];
  /** Group-relative advantage, broadcast over the sequence's model tokens. */
  advantage: number;
  reward: number;
  promptLength: number;
}

/** The batch of one RL step: what a `Trainer` consumes (see services/optimization/README.md). */
export interface TrainingBatch {
  sequences: TrainingSequence[];
  /** Model tokens in the batch (the token-mean denominator). */
  tokens: number;
  advantageMean: number;
  advantageStd: number;
  /** sha256 of the canonical batch content: the same events always give the same hash. */
  hash: string;
}

/**
 * Build the step's training batch (docs/design/protocol.md §6): for each group, advantages over its kept rollouts
 * ({@link groupAdvantages}); each rollout becomes one sequence `prompt ++ response` whose loss mask is 0 on
 * the prompt and the rollout's mask on the response, old logprobs aligned the same way. Groups and
 * rollouts keep the given order (callers pass groups by prompt index, rollouts by sample index).
 * Throws {@link GrpoInputError} when a rollout's response arrays differ in length.
 */
export function buildTrainingBatch(groups: readonly BatchGroup[]): TrainingBatch {
  const sequences: TrainingSequence[] = [];
  for (const g of groups) {
    const { advantages } = groupAdvantages(g.rollouts.map((r) => r.reward));
    g.rollouts.forEach((r, i) => {
      const n = r.responseTokenIds.length;
      if (r.logprobs.length !== n || r.lossMask.length !== n) {
        throw new GrpoInputError(
          `rollout ${r.rolloutId}: responseTokenIds (${n}), logprobs (${r.logprobs.length}) and lossMask (${r.lossMask.length}) must have the same length`,
          'rollouts.lossMask',
        );
      }
      const p = r.promptTokenIds.length;
      sequences.push({
        rolloutId: r.rolloutId,
        groupId: g.groupId,
        tokenIds: [...r.promptTokenIds, ...r.responseTokenIds],
        lossMask: [...new Array<number>(p).fill(0), ...r.lossMask.map((m) => (m ? 1 : 0))],
        oldLogprobs: [...new Array<number>(p).fill(0), ...r.logprobs.map((l, t) => (r.lossMask[t] ? l : 0))],
        advantage: advantages[i],
        reward: r.reward,
        promptLength: p,
      });
    });
  }
  let tokens = 0;
  let sum = 0;
  for (const s of sequences) {
    const m = s.lossMask.reduce((a, b) => a + b, 0);
    tokens += m;
    sum += m * s.advantage;
  }
  // Token-weighted, because the loss is a token mean.
  const advantageMean = tokens ? sum / tokens : 0;
  let sq = 0;
  for (const s of sequences) sq += s.lossMask.reduce((a, b) => a + b, 0) * (s.advantage - advantageMean) ** 2;
  const advantageStd = tokens ? Math.sqrt(sq / tokens) : 0;
  const hash = createHash('sha256')
    .update(JSON.stringify(sequences.map((s) => [s.rolloutId, s.tokenIds, s.lossMask, s.oldLogprobs, s.advantage])))
    .digest('hex');
  return { sequences, tokens, advantageMean, advantageStd, hash };
}
