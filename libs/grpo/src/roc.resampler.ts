import { GrpoInputError, requireCount } from './errors';
import { rngFromSeed, sampleUniform, sampleWeighted, seedOf } from './prng';
import { rocPenalties, type RolloutCounters } from './roc-penalties';

/**
 * How a group of oversampled rollouts is down-sampled to G:
 * - `weighted` (paper, default): positives sampled without replacement with probability ∝ 1/(p_err+p_format+1e-6);
 * - `topk` (released microsoft/rStar code): the k_pos positives with the lowest p_err+p_format, ties in rollout order;
 * - `none` (plain GRPO, the ablation baseline): G rollouts uniformly at random, no RoC.
 */
export type ResampleMode = 'weighted' | 'topk' | 'none';

/** One rollout of a group, as the resampler sees it. */
export interface GroupRollout extends RolloutCounters {
  rolloutId: string;
  /** Binary reward (docs/design/protocol.md §4); > 0 counts as positive. */
  reward: number;
}

export interface ResampleGroupInput {
  groupId: string;
  /** The group's rollouts, in rollout (sample index) order — `topk` breaks ties by this order. */
  rollouts: readonly GroupRollout[];
  /** Rollouts to keep (G). Groups of at most G rollouts are kept whole (unless all rewards are equal). */
  G: number;
  mode: ResampleMode;
  runSeed: number;
  step: number;
}

export interface RolloutPenalty {
  rolloutId: string;
  pErr: number;
  pFormat: number;
}

export interface ResampleGroupResult {
  /** Kept rollout ids, in input order. Empty when the group is dropped. */
  kept: string[];
  /** Every other rollout id, in input order. */
  dropped: string[];
  /** Penalties of every rollout, in input order (computed in every mode, for the metrics). */
  penalties: RolloutPenalty[];
  /** `all_equal` when every reward is the same (no learning signal), else null. */
  groupDropped: 'all_equal' | null;
  /** The recorded seed: `seedOf(runSeed, step, groupId)`; {@link rngFromSeed} of it replays the pick. */
  seed: string;
  /** Positives and negatives kept (0 and 0 when the group is dropped). */
  kPos: number;
  kNeg: number;
}

/** Weight floor of the paper's sampling weights, so a perfect rollout (penalty 0) has a finite weight. */
export const ROC_WEIGHT_EPS = 1e-6;
/** Minimum kept per side when the side has members (docs/design/protocol.md §5). */
export const ROC_MIN_PER_SIDE = 2;

/**
 * How many positives and negatives to keep (docs/design/protocol.md §5): `k_pos = round(|pos| * G / n)` over the n
 * rollouts received (n = 2G for a full group, so the pass ratio is preserved), `k_neg = G - k_pos`; a
 * side with members keeps at least `min(2, |side|)`. Rounding is half-up (`Math.round`). With G < 4
 * both minimums cannot hold; each is then lowered, the larger first (ties: positives first), until they
 * fit. Groups of n <= G are kept whole.
 */
export function keepCounts(nPos: number, nNeg: number, G: number): { kPos: number; kNeg: number } {
  requireCount(nPos, 'nPos');
  requireCount(nNeg, 'nNeg');
  if (!Number.isInteger(G) || G < 1) throw new GrpoInputError(`G must be an integer >= 1, got ${G}`, 'G');
  const n = nPos + nNeg;
  if (n <= G) return { kPos: nPos, kNeg: nNeg };
  let minPos = Math.min(ROC_MIN_PER_SIDE, nPos);
  let minNeg = Math.min(ROC_MIN_PER_SIDE, nNeg);
  while (minPos + minNeg > G) {
    if (minPos >= minNeg) minPos--;
    else minNeg--;
  }
  let kPos = Math.round((nPos * G) / n);
  kPos = Math.max(kPos, minPos);
  kPos = Math.min(kPos, G - minNeg, nPos);
  let kNeg = G - kPos;
  if (kNeg > nNeg) {
    kNeg = nNeg;
    kPos = G - kNeg;
  }
  return { kPos, kNeg };
}

/**
 * GRPO-RoC down-sampling of one group (rStar2-Agent §3.2 "Resample-on-Correct", docs/design/protocol.md §5).
 * 1. All rewards equal (all 0 or all 1) -> the whole group is dropped (`groupDropped: 'all_equal'`).
 * 2. Mode `none`: G rollouts uniformly at random.
 * 3. Otherwise split positives/negatives, size each side with {@link keepCounts}, draw the negatives
 *    uniformly without replacement and the positives by `weighted` or `topk` (see {@link ResampleMode}).
 * Randomness: one sfc32 stream seeded by `seedOf(runSeed, step, groupId)`; positives draw first, then
 * negatives, so the same inputs always give the same pick.
 * Throws {@link GrpoInputError} for an empty group, duplicate rollout ids, bad counters or G < 1.
 */
export function resampleGroup(input: ResampleGroupInput): ResampleGroupResult {
  const { groupId, rollouts, G, mode, runSeed, step } = input;
  if (!Number.isInteger(G) || G < 1) throw new GrpoInputError(`G must be an integer >= 1, got ${G}`, 'G');
  if (!['weighted', 'topk', 'none'].includes(mode)) {
    throw new GrpoInputError(`mode must be "weighted", "topk" or "none", got "${String(mode)}"`, 'mode');
  }
  if (rollouts.length === 0) throw new GrpoInputError(`group ${groupId} has no rollouts`, 'rollouts');
  const seen = new Set<string>();
  for (const r of rollouts) {
    if (seen.has(r.rolloutId)) throw new GrpoInputError(`duplicate rollout id ${r.rolloutId}`, 'rollouts.rolloutId');
    seen.add(r.rolloutId);
    if (typeof r.reward !== 'number' || !Number.isFinite(r.reward)) {
      throw new GrpoInputError(`reward of ${r.rolloutId} must be a finite number`, 'rollouts.reward');
    }
  }
  const seed = seedOf(runSeed, step, groupId);
  const penalties = rollouts.map((r) => ({ rolloutId: r.rolloutId, ...rocPenalties(r) }));
  const order = new Map(rollouts.map((r, i) => [r.rolloutId, i]));
  const inOrder = (keep: Set<string>) => ({
    kept: rollouts.filter((r) => keep.has(r.rolloutId)).map((r) => r.rolloutId),
    dropped: rollouts.filter((r) => !keep.has(r.rolloutId)).map((r) => r.rolloutId),
  });

  if (rollouts.every((r) => r.reward === rollouts[0].reward)) {
    return { ...inOrder(new Set()), penalties, groupDropped: 'all_equal', seed, kPos: 0, kNeg: 0 };
  }
  const rng = rngFromSeed(seed);
  const isPos = (r: GroupRollout) => r.reward > 0;

  if (mode === 'none') {
    const keep = new Set(sampleUniform(rng, rollouts, G).map((r) => r.rolloutId));
    const kPos = rollouts.filter((r) => keep.has(r.rolloutId) && isPos(r)).length;
    return { ...inOrder(keep), penalties, groupDropped: null, seed, kPos, kNeg: keep.size - kPos };
  }

  const pos = rollouts.filter(isPos);
  const neg = rollouts.filter((r) => !isPos(r));
  const { kPos, kNeg } = keepCounts(pos.length, neg.length, G);
  const penaltyOf = new Map(penalties.map((p) => [p.rolloutId, p.pErr + p.pFormat]));
  let keptPos: GroupRollout[];
  if (mode === 'topk') {
    keptPos = pos
      .slice()
      .sort((a, b) => penaltyOf.get(a.rolloutId)! - penaltyOf.get(b.rolloutId)! || order.get(a.rolloutId)! - order.get(b.rolloutId)!)
      .slice(0, kPos);
  } else {
    const weights = pos.map((r) => 1 / (penaltyOf.get(r.rolloutId)! + ROC_WEIGHT_EPS));
    keptPos = sampleWeighted(rng, pos, weights, kPos);
  }
  const keptNeg = sampleUniform(rng, neg, kNeg);
  const keep = new Set([...keptPos, ...keptNeg].map((r) => r.rolloutId));
  return { ...inOrder(keep), penalties, groupDropped: null, seed, kPos, kNeg };
}
