import * as tf from '@tensorflow/tfjs';

/** Clipping constants of the GRPO-RoC token loss (docs/design/protocol.md §6). */
export interface GrpoClip {
  /** Lower clip: ratio >= 1 - epsLow. Default 0.2. */
  epsLow: number;
  /** Upper clip ("clip-higher", DAPO): ratio <= 1 + epsHigh. Default 0.28. */
  epsHigh: number;
  /** Dual clip c: for A < 0 the loss is at most -c·A (Ye et al. 2020). Default 3. */
  dualClip: number;
}

/**
 * Masked token-mean negative log-likelihood (SFT). `lp` [B, T-1] target logprobs, `mask` [B, T-1],
 * `denom` = number of mask tokens of the whole (accumulated) batch.
 */
export function sftLoss(lp: tf.Tensor2D, mask: tf.Tensor2D, denom: number): tf.Scalar {
  return tf.div(tf.neg(tf.sum(tf.mul(lp, mask))), denom) as tf.Scalar;
}

/**
 * GRPO-RoC token loss (docs/design/protocol.md §6; rStar2-Agent §2-3, arXiv 2508.20722):
 * rho = exp(clamp(logp - logp_old, ±20)); l = -min(rho·A, clip(rho, 1-epsLow, 1+epsHigh)·A);
 * for A < 0, l = min(l, -c·A) (dual clip). Sum over mask tokens divided by `denom` (token-mean over the batch).
 * Also returns per-token sums (not means) of: clipped-token indicator, k3 approx-KL (Schulman 2020).
 * Shapes: all [B, T-1]; `adv` is the per-rollout advantage broadcast over tokens. `weight` (optional, constant):
 * a per-token factor on the loss, the behaviour weight of decoupled PPO ({@link behaviourWeights}) with `oldLp`
 * then the proximal logprobs; absent = 1.
 */
export function grpoLoss(
  lp: tf.Tensor2D, oldLp: tf.Tensor2D, adv: tf.Tensor2D, mask: tf.Tensor2D, denom: number, clip: GrpoClip, weight?: tf.Tensor2D,
): { loss: tf.Scalar; clippedSum: tf.Scalar; klSum: tf.Scalar } {
  const logRatio = tf.clipByValue(tf.sub(lp, oldLp), -20, 20);
  const ratio = tf.exp(logRatio);
  const s1 = tf.mul(ratio, adv);
  const s2 = tf.mul(tf.clipByValue(ratio, 1 - clip.epsLow, 1 + clip.epsHigh), adv);
  const ppo = tf.neg(tf.minimum(s1, s2));
  const dualBound = tf.mul(-clip.dualClip, adv);
  const neg = tf.less(adv, 0);
  const clippedTok = tf.where(neg, tf.minimum(ppo, dualBound), ppo);
  const perTok = weight ? tf.mul(clippedTok, weight) : clippedTok;
  const loss = tf.div(tf.sum(tf.mul(perTok, mask)), denom) as tf.Scalar;
  // A token is "clipped" when its gradient is cut: the clipped surrogate or the dual bound is the active branch.
  const clipped = tf.logicalOr(tf.less(s2, s1), tf.logicalAnd(neg, tf.greater(ppo, dualBound)));
  const clippedSum = tf.sum(tf.mul(tf.cast(clipped, 'float32'), mask)) as tf.Scalar;
  const kl = tf.sub(tf.sub(tf.exp(logRatio), 1), logRatio);
  const klSum = tf.sum(tf.mul(kl, mask)) as tf.Scalar;
  return { loss, clippedSum, klSum };
}

/**
 * Behaviour weights of decoupled PPO (Hilton et al. 2022, arXiv 2110.00641; AReaL, arXiv 2505.24298), same rule as
 * libs/grpo `behaviourWeight`: `min(exp(clamp(proxLp - behavLp, ±20)), cap)` per token, no cap when `cap` is null.
 * `proxLp`: the trainer's logprobs before this step's update; `behavLp`: the engine's recorded ones. [B, T-1].
 */
export function behaviourWeights(proxLp: tf.Tensor2D, behavLp: tf.Tensor2D, cap: number | null): tf.Tensor2D {
  const w = tf.exp(tf.clipByValue(tf.sub(proxLp, behavLp), -20, 20));
  return (cap === null ? w : tf.minimum(w, cap)) as tf.Tensor2D;
}

/** Sum over mask tokens of the predictive entropy -Σ p log p; `logp` [B*T, V] -> rows of [B, T-1] masked by `mask`. */
export function entropySum(logp: tf.Tensor2D, B: number, T: number, mask: tf.Tensor2D): tf.Scalar {
  const ent = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), 1));
  const perTok = tf.slice(tf.reshape(ent, [B, T]), [0, 0], [B, T - 1]);
  return tf.sum(tf.mul(perTok, mask)) as tf.Scalar;
}
