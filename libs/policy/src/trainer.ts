import * as tf from '@tensorflow/tfjs';
import { AdamW, type AdamWOptions } from './adamw.optimizer';
import { PolicyInputError } from './errors';
import { behaviourWeights, entropySum, grpoLoss, sftLoss, type GrpoClip } from './policy.losses';
import type { PolicyModel } from './policy.model';
import { targetLogProbs } from './transformer.forward';

/** Trainer options: AdamW (docs/design/protocol.md §6 defaults: weight decay 0.01, grad clip 1.0) and the GRPO-RoC clip constants. */
export interface TrainerOptions extends Partial<AdamWOptions>, Partial<GrpoClip> {
  lr: number;
  /** Sequences per forward/backward pass; gradients are accumulated over micro-batches. Default 32. */
  microBatch?: number;
  /**
   * Decoupled PPO (off-policy correction for asynchronous rollouts; AReaL, arXiv 2505.24298): before the update
   * the trainer recomputes each token's logprob under its current weights (the proximal policy), takes the ratio
   * against those and weights each token by `min(pi_prox / pi_behav, tisCap)`, pi_behav being `oldLogprobs` (what
   * the engine recorded). Off (default): the ratio is against `oldLogprobs` and no weight applies.
   */
  decoupled?: boolean;
  /** Cap of the decoupled behaviour weight (>= 1); absent or null = no cap. */
  tisCap?: number | null;
}

/** A masked batch. Per-token arrays are aligned with `tokenIds`: entry t concerns token t (predicted from tokens < t); `lossMask[b][0]` is ignored. */
export interface SftBatch {
  tokenIds: number[][];
  lossMask: number[][];
}

/** A GRPO batch: `advantages[b]` per rollout, `oldLogprobs[b][t]` = sampling logprob of token t (aligned like lossMask). */
export interface GrpoBatch extends SftBatch {
  advantages: number[];
  oldLogprobs: number[][];
}

export interface SftMetrics {
  loss: number;
  gradNorm: number;
  lr: number;
  tokens: number;
}

export interface GrpoMetrics extends SftMetrics {
  clipFraction: number;
  approxKl: number;
  entropy: number;
  /** Decoupled PPO only: mean behaviour weight and share of tokens at the cap (null when off). */
  tis?: { cap: number | null; meanWeight: number; cappedFraction: number } | null;
}

/**
 * One optimizer step per call on a {@link PolicyModel}: `sftStep` (masked NLL) and `grpoStep` (GRPO-RoC token
 * loss, docs/design/protocol.md §6). Both normalise by the batch's total mask tokens (token-mean) across micro-batches.
 */
export class Trainer {
  readonly optimizer: AdamW;
  private readonly microBatch: number;
  private readonly clip: GrpoClip;
  private readonly decoupled: boolean;
  private readonly tisCap: number | null;

  constructor(
    readonly model: PolicyModel,
    opts: TrainerOptions,
  ) {
    if (!(opts.lr > 0)) throw new PolicyInputError('lr must be > 0 (e.g. 3e-3 for SFT of the tiny model)', 'lr');
    this.microBatch = opts.microBatch ?? 32;
    this.clip = { epsLow: opts.epsLow ?? 0.2, epsHigh: opts.epsHigh ?? 0.28, dualClip: opts.dualClip ?? 3 };
    this.decoupled = opts.decoupled ?? false;
    this.tisCap = opts.tisCap ?? null;
    if (this.tisCap !== null && !(this.tisCap >= 1)) throw new PolicyInputError(`tisCap must be >= 1 (or absent for no cap), got ${this.tisCap}`, 'tisCap');
    this.optimizer = new AdamW(model.variables(), model.specs.map((s) => s.decay), {
      lr: opts.lr, warmupSteps: opts.warmupSteps ?? 0, totalSteps: opts.totalSteps, minLrRatio: opts.minLrRatio,
      weightDecay: opts.weightDecay ?? 0.01, gradClip: opts.gradClip ?? 1, beta1: opts.beta1, beta2: opts.beta2, eps: opts.eps,
    });
    if (model.loadedOptimizerState) {
      this.optimizer.importState(model.loadedOptimizerState);
      model.loadedOptimizerState = null;
    }
    model.optimizerSource = this.optimizer;
  }

  /** Optimizer steps taken so far (restored from a checkpoint). */
  get step(): number {
    return this.optimizer.step;
  }

  private check(batch: SftBatch, grpo: boolean): number {
    this.model.checkSequences(batch.tokenIds, 'tokenIds');
    const B = batch.tokenIds.length;
    if (batch.lossMask?.length !== B) throw new PolicyInputError(`lossMask has ${batch.lossMask?.length} rows for ${B} sequences`, 'lossMask');
    let n = 0;
    batch.tokenIds.forEach((s, b) => {
      if (batch.lossMask[b].length !== s.length) throw new PolicyInputError(`lossMask[${b}] has length ${batch.lossMask[b].length}, tokenIds[${b}] ${s.length} (align them token by token)`, `lossMask[${b}]`);
      for (let t = 1; t < s.length; t++) n += batch.lossMask[b][t] ? 1 : 0;
    });
    if (grpo) {
      const g = batch as GrpoBatch;
      if (g.advantages?.length !== B) throw new PolicyInputError(`advantages has ${g.advantages?.length} entries for ${B} sequences`, 'advantages');
      if (g.oldLogprobs?.length !== B) throw new PolicyInputError(`oldLogprobs has ${g.oldLogprobs?.length} rows for ${B} sequences`, 'oldLogprobs');
      g.oldLogprobs.forEach((r, b) => {
        if (r.length !== batch.tokenIds[b].length) throw new PolicyInputError(`oldLogprobs[${b}] has length ${r.length}, tokenIds[${b}] ${batch.tokenIds[b].length}`, `oldLogprobs[${b}]`);
      });
    }
    if (n === 0) throw new PolicyInputError('lossMask selects no token (at least one position t >= 1 must be 1)', 'lossMask');
    return n;
  }

  /** Right-pad rows [from, to) of a per-token array to T, dropping position 0 (targets start at token 1). */
  private shifted(rows: number[][], T: number): number[] {
    return rows.flatMap((r) => [...r.slice(1), ...new Array(T - r.length).fill(0)].map(Number));
  }

  private run(batch: SftBatch, grpo: GrpoBatch | null): GrpoMetrics {
    const denom = this.check(batch, grpo !== null);
    const vars = this.model.variables();
    let accum: tf.Tensor[] | null = null;
    let lossSum = 0;
    let clippedSum = 0;
    let klSum = 0;
    let entSum = 0;
    let wSum = 0;
    let atCap = 0;
    const { params, config, tokenizer } = this.model;
    const micro = (i: number) => {
      const ids = batch.tokenIds.slice(i, i + this.microBatch);
      const T = Math.max(2, ...ids.map((s) => s.length));
      return { B: ids.length, T, padded: ids.map((s) => [...s, ...new Array(T - s.length).fill(0)]) };
    };
    // Decoupled PPO: the proximal logprobs are the weights' before this step's (single) update, so every
    // micro-batch is recomputed first, without gradients.
    const prox: tf.Tensor2D[] = [];
    if (grpo && this.decoupled) {
      for (let i = 0; i < batch.tokenIds.length; i += this.microBatch) {
        const { padded } = micro(i);
        prox.push(tf.tidy(() => targetLogProbs(params, config, tokenizer.vocabSize, padded).lp));
      }
    }
    for (let i = 0; i < batch.tokenIds.length; i += this.microBatch) {
      const { B, T, padded } = micro(i);
      const mask = tf.tensor2d(this.shifted(batch.lossMask.slice(i, i + B), T), [B, T - 1]);
      const extras: tf.Scalar[] = [];
      const proxLp = prox[i / this.microBatch];
      const { value, grads } = tf.variableGrads(() => {
        const { lp, logp } = targetLogProbs(params, config, tokenizer.vocabSize, padded);
        if (!grpo) return sftLoss(lp, mask, denom);
        const old = tf.tensor2d(this.shifted(grpo.oldLogprobs.slice(i, i + B), T), [B, T - 1]);
        const adv = tf.tile(tf.tensor2d(grpo.advantages.slice(i, i + B), [B, 1]), [1, T - 1]) as tf.Tensor2D;
        const w = proxLp ? behaviourWeights(proxLp, old, this.tisCap) : undefined;
        const r = grpoLoss(lp, proxLp ?? old, adv, mask, denom, this.clip, w);
        extras.push(tf.keep(r.clippedSum), tf.keep(r.klSum), tf.keep(entropySum(logp, B, T, mask)));
        if (w) {
          extras.push(tf.keep(tf.sum(tf.mul(w, mask)) as tf.Scalar));
          if (this.tisCap !== null) extras.push(tf.keep(tf.sum(tf.mul(tf.cast(tf.greaterEqual(w, this.tisCap), 'float32'), mask)) as tf.Scalar));
        }
        return r.loss;
      }, vars);
      proxLp?.dispose();
      mask.dispose();
      lossSum += value.dataSync()[0];
      value.dispose();
      if (extras.length) {
        clippedSum += extras[0].dataSync()[0];
        klSum += extras[1].dataSync()[0];
        entSum += extras[2].dataSync()[0];
        if (extras.length > 3) wSum += extras[3].dataSync()[0];
        if (extras.length > 4) atCap += extras[4].dataSync()[0];
        for (const e of extras) e.dispose();
      }
      const list = vars.map((v) => grads[v.name]);
      if (!accum) accum = list;
      else {
        const prev: tf.Tensor[] = accum;
        accum = prev.map((a, k) => tf.add(a, list[k]));
        for (const t of [...prev, ...list]) t.dispose();
      }
    }
    const { gradNorm, lr } = this.optimizer.apply(accum!);
    for (const g of accum!) g.dispose();
    const tis = grpo && this.decoupled ? { cap: this.tisCap, meanWeight: wSum / denom, cappedFraction: atCap / denom } : null;
    return { loss: lossSum, gradNorm, lr, tokens: denom, clipFraction: clippedSum / denom, approxKl: klSum / denom, entropy: entSum / denom, tis };
  }

  /** One SFT step: token-mean NLL over `lossMask` (model-written tokens only). */
  sftStep(batch: SftBatch): SftMetrics {
    const m = this.run(batch, null);
    return { loss: m.loss, gradNorm: m.gradNorm, lr: m.lr, tokens: m.tokens };
  }

  /** One GRPO-RoC step (docs/design/protocol.md §6; decoupled PPO when the trainer was built with `decoupled`); returns loss, clip fraction, approx KL (k3), entropy, pre-clip grad norm. */
  grpoStep(batch: GrpoBatch): GrpoMetrics {
    return this.run(batch, batch);
  }
}
