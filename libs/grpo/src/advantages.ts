import { GrpoInputError } from './errors';

/** Epsilon of the advantage denominator (docs/design/protocol.md §6). */
export const ADVANTAGE_EPS = 1e-6;

export interface GroupAdvantages {
  /** One advantage per reward, same order. */
  advantages: number[];
  mean: number;
  /** Unbiased (n - 1) standard deviation; 1 for a group of one. */
  std: number;
}

/**
 * Group-relative advantages of GRPO (DeepSeekMath §4.1.2; rStar2-Agent eq. 1, docs/design/protocol.md §6):
 * `A_i = (r_i - mean(r)) / (std(r) + 1e-6)` over the kept rollouts of one group, with the unbiased
 * standard deviation. A group of one has no spread to compare with: it gets mean 0 and std 1, so
 * `A = r / (1 + 1e-6)`. An empty group gives no advantages. Throws {@link GrpoInputError} for a
 * non-finite reward.
 */
export function groupAdvantages(rewards: readonly number[]): GroupAdvantages {
  rewards.forEach((r, i) => {
    if (typeof r !== 'number' || !Number.isFinite(r)) {
      throw new GrpoInputError(`rewards[${i}] must be a finite number, got ${String(r)}`, `rewards.${i}`);
    }
  });
  const n = rewards.length;
  if (n === 0) return { advantages: [], mean: 0, std: 1 };
  let mean = 0;
  let std = 1;
  if (n > 1) {
    mean = rewards.reduce((s, r) => s + r, 0) / n;
    std = Math.sqrt(rewards.reduce((s, r) => s + (r - mean) ** 2, 0) / (n - 1));
  }
  return { advantages: rewards.map((r) => (r - mean) / (std + ADVANTAGE_EPS)), mean, std };
}
