import { GrpoInputError } from './errors';

/** PPO-clip settings of docs/design/protocol.md §6 (clip-higher + dual clip). */
export interface ClipConfig {
  /** Lower clip: ratio floor 1 - epsLow (0.2). */
  epsLow: number;
  /** Upper clip ("clip-higher", DAPO): ratio ceiling 1 + epsHigh (0.28). */
  epsHigh: number;
  /** Dual-clip constant c (3): for A < 0 the loss is at most -c*A. */
  dualClip: number;
}

export const DEFAULT_CLIP: ClipConfig = { epsLow: 0.2, epsHigh: 0.28, dualClip: 3 };
/** The log-ratio is clamped to ±20 before exp so a stale token cannot overflow. */
export const LOG_RATIO_CLAMP = 20;

/** The loss of one model token and why it took that value. */
export interface TokenLoss {
  loss: number;
  /** rho = exp(clamp(logpNew - logpOld, ±20)). */
  ratio: number;
  /** The clipped surrogate was the binding term (verl's `pg_clipfrac`: clipped loss > unclipped loss). */
  clipped: boolean;
  /** The dual-clip bound -c*A was the binding term (only for A < 0). */
  dualClipped: boolean;
}

/**
 * Per-token clipped policy-gradient loss of GRPO-RoC (rStar2-Agent eq. 2, docs/design/protocol.md §6):
 * `loss = -min(rho*A, clip(rho, 1-epsLow, 1+epsHigh)*A)`, and for `A < 0` additionally
 * `loss = min(loss, -c*A)` (dual clip, Ye et al. 2020). Numbers, not tensors: used for metrics and to
 * cross-check a tensor trainer. Log-probs are natural logs.
 */
export function clippedTokenLoss(logpNew: number, logpOld: number, advantage: number, cfg: ClipConfig = DEFAULT_CLIP): TokenLoss {
  const logRatio = Math.max(-LOG_RATIO_CLAMP, Math.min(LOG_RATIO_CLAMP, logpNew - logpOld));
  const ratio = Math.exp(logRatio);
  const unclipped = -ratio * advantage;
  const clippedRatio = Math.max(1 - cfg.epsLow, Math.min(1 + cfg.epsHigh, ratio));
  const clippedLoss = -clippedRatio * advantage;
  const ppo = Math.max(unclipped, clippedLoss);
  const clipped = clippedLoss > unclipped;
  if (advantage < 0) {
    const bound = -cfg.dualClip * advantage;
    if (bound < ppo) return { loss: bound, ratio, clipped, dualClipped: true };
  }
  return { loss: ppo, ratio, clipped, dualClipped: false };
}

/** One sequence of a batch for {@link clippedLossStats}: per-token arrays of equal length. */
export interface LossSequence {
  logpNew: readonly number[];
  logpOld: readonly number[];
  /** 1 = model token (counted), 0 = prompt or tool-response token (ignored). */
  mask: readonly number[];
  /** The rollout's advantage, broadcast over its model tokens. */
  advantage: number;
}

export interface LossStats {
  /** Token-mean loss over every model token of the batch. */
  loss: number;
  /** Share of model tokens whose clipped surrogate was binding. */
  clipFraction: number;
  /** Share of model tokens bounded by the dual clip. */
  dualClipFraction: number;
  /** k3 estimator of KL(old || new): mean of (rho - 1) - log rho (Schulman 2020); >= 0. */
  approxKl: number;
  /** Model tokens counted. */
  tokens: number;
}

/**
 * Token-mean loss and its metrics over a batch (docs/design/protocol.md §6: mean over all model tokens of the batch,
 * not per sequence). Throws {@link GrpoInputError} when a sequence's arrays differ in length.
 */
export function clippedLossStats(seqs: readonly LossSequence[], cfg: ClipConfig = DEFAULT_CLIP): LossStats {
  let loss = 0;
  let clipped = 0;
  let dual = 0;
  let kl = 0;
  let tokens = 0;
  seqs.forEach((s, i) => {
    if (s.logpNew.length !== s.mask.length || s.logpOld.length !== s.mask.length) {
      throw new GrpoInputError(`sequence ${i}: logpNew, logpOld and mask must have the same length`, `seqs.${i}`);
    }
    for (let t = 0; t < s.mask.length; t++) {
      if (!s.mask[t]) continue;
      const r = clippedTokenLoss(s.logpNew[t], s.logpOld[t], s.advantage, cfg);
      loss += r.loss;
      clipped += r.clipped ? 1 : 0;
      dual += r.dualClipped ? 1 : 0;
      kl += r.ratio - 1 - Math.log(r.ratio);
      tokens++;
    }
  });
  const d = Math.max(1, tokens);
  return { loss: loss / d, clipFraction: clipped / d, dualClipFraction: dual / d, approxKl: kl / d, tokens };
}

/**
 * Entropy (nats) of the categorical distribution given by unnormalised `logits`, computed stably with
 * log-sum-exp: `H = logsumexp(z) - sum softmax(z) * z`.
 */
export function entropyFromLogits(logits: readonly number[]): number {
  if (logits.length === 0) throw new GrpoInputError('logits must not be empty', 'logits');
  const m = Math.max(...logits);
  let z = 0;
  for (const l of logits) z += Math.exp(l - m);
  const lse = m + Math.log(z);
  let h = lse;
  for (const l of logits) h -= Math.exp(l - lse) * l;
  return Math.max(0, h);
}
