import { clippedTokenLoss, DEFAULT_CLIP, LOG_RATIO_CLAMP, type ClipConfig, type LossStats } from './clipped-loss';
import { GrpoInputError } from './errors';

/**
 * Behaviour importance weight of decoupled PPO for one token: `min(exp(clamp(logpProx - logpBehav, ±20)), cap)`
 * (no cap when `cap` is null). `logpBehav` is the logprob the engine recorded when it sampled the token (under
 * whichever policy version served it, possibly older than the trainer's); `logpProx` is the trainer's own
 * logprob of the token under the proximal policy, the weights before this step's update. The cap is the
 * truncated-importance-sampling cap (`trainer.tisCap`): it bounds the weight rather than dropping the token
 * (AReaL instead masks tokens above its `behav_imp_weight_cap`), so a decoupled loss with a cap is exactly the
 * TIS correction of Yao et al. 2025 taken against the proximal policy.
 */
export function behaviourWeight(logpProx: number, logpBehav: number, cap: number | null): number {
  const w = Math.exp(Math.max(-LOG_RATIO_CLAMP, Math.min(LOG_RATIO_CLAMP, logpProx - logpBehav)));
  return cap === null ? w : Math.min(w, cap);
}

/** The loss of one token under decoupled PPO and its parts. */
export interface DecoupledTokenLoss {
  /** `weight * clippedTokenLoss(logpNew, logpProx, A).loss`. */
  loss: number;
  /** rho = exp(clamp(logpNew - logpProx, ±20)): the PPO ratio against the proximal policy. */
  ratio: number;
  /** The behaviour importance weight pi_prox / pi_behav after the cap ({@link behaviourWeight}). */
  weight: number;
  clipped: boolean;
  dualClipped: boolean;
}

/**
 * Per-token loss of decoupled PPO (Hilton, Cobbe & Schulman 2022, "Batch size-invariance for policy
 * optimization", arXiv 2110.00641; used for asynchronous RL by AReaL, Fu et al. 2025, arXiv 2505.24298, its
 * "decoupled PPO objective"):
 * `loss = w * clippedTokenLoss(logpNew, logpProx, A)` with `w = min(pi_prox / pi_behav, cap)` held constant
 * (no gradient flows through it). The trust region (clip-higher, dual clip of docs/design/protocol.md §6) is
 * centred on the proximal policy, the recent weights the trainer recomputed, rather than on the possibly stale
 * behaviour policy that sampled the token; `w` corrects the sampling distribution. When `logpProx === logpBehav`
 * the weight is exactly 1 and the loss is exactly {@link clippedTokenLoss}'s against the behaviour logprobs.
 * Log-probs are natural logs.
 */
export function decoupledTokenLoss(
  logpNew: number, logpProx: number, logpBehav: number, advantage: number, cap: number | null, cfg: ClipConfig = DEFAULT_CLIP,
): DecoupledTokenLoss {
  const t = clippedTokenLoss(logpNew, logpProx, advantage, cfg);
  const weight = behaviourWeight(logpProx, logpBehav, cap);
  return { loss: weight * t.loss, ratio: t.ratio, weight, clipped: t.clipped, dualClipped: t.dualClipped };
}

/** One sequence for {@link decoupledLossStats}: per-token arrays of equal length. */
export interface DecoupledSequence {
  logpNew: readonly number[];
  /** Proximal logprobs: the trainer's recompute under the weights before this step's update. */
  logpProx: readonly number[];
  /** Behaviour logprobs: what the engine recorded when it sampled each token (the batch's `oldLogprobs`). */
  logpBehav: readonly number[];
  /** 1 = model token (counted), 0 = prompt or tool-response token (ignored). */
  mask: readonly number[];
  advantage: number;
}

/** {@link LossStats} plus the behaviour weights' mean and the share of tokens at the cap. */
export interface DecoupledLossStats extends LossStats {
  /** Mean behaviour weight over model tokens (after the cap). */
  meanWeight: number;
  /** Share of model tokens whose weight reached the cap (0 without a cap). */
  cappedFraction: number;
}

/**
 * Token-mean decoupled-PPO loss and its metrics over a batch (mean over all model tokens of the batch, as
 * docs/design/protocol.md §6). `approxKl` is the k3 estimate of KL(prox || new). With every `logpProx` equal to
 * its `logpBehav` the loss, clip fractions and KL equal {@link clippedLossStats}'s with `logpOld = logpBehav`.
 * Throws {@link GrpoInputError} when a sequence's arrays differ in length or `cap` is below 1.
 */
export function decoupledLossStats(seqs: readonly DecoupledSequence[], cap: number | null, cfg: ClipConfig = DEFAULT_CLIP): DecoupledLossStats {
  if (cap !== null && !(cap >= 1)) throw new GrpoInputError(`cap must be >= 1 or null (no cap), got ${cap}`, 'cap');
  let loss = 0;
  let clipped = 0;
  let dual = 0;
  let kl = 0;
  let wSum = 0;
  let atCap = 0;
  let tokens = 0;
  seqs.forEach((s, i) => {
    const n = s.mask.length;
    if (s.logpNew.length !== n || s.logpProx.length !== n || s.logpBehav.length !== n) {
      throw new GrpoInputError(`sequence ${i}: logpNew, logpProx, logpBehav and mask must have the same length`, `seqs.${i}`);
    }
    for (let t = 0; t < n; t++) {
      if (!s.mask[t]) continue;
      const r = decoupledTokenLoss(s.logpNew[t], s.logpProx[t], s.logpBehav[t], s.advantage, cap, cfg);
      loss += r.loss;
      clipped += r.clipped ? 1 : 0;
      dual += r.dualClipped ? 1 : 0;
      kl += r.ratio - 1 - Math.log(r.ratio);
      wSum += r.weight;
      atCap += cap !== null && r.weight >= cap ? 1 : 0;
      tokens++;
    }
  });
  const d = Math.max(1, tokens);
  return {
    loss: loss / d, clipFraction: clipped / d, dualClipFraction: dual / d, approxKl: kl / d, tokens,
    meanWeight: wSum / d, cappedFraction: atCap / d,
  };
}
