import * as tf from '@tensorflow/tfjs';
import type { ModelConfig } from '@rstar/contracts';
import type { ParamMap } from './transformer.params';

/**
 * `x @ w` with an explicit gradient: dx = dy @ wᵀ, dw = xᵀ @ dy using materialised transposes.
 * POLICY-NOTES: wasm's transposed matmuls dominate the training step otherwise (~3x slower).
 */
const customLinear = tf.customGrad(((x: tf.Tensor2D, w: tf.Tensor2D, save: tf.GradSaveFunc) => {
  save([x, w]);
  return {
    value: tf.matMul(x, w),
    gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => {
      const [xs, ws] = saved as tf.Tensor2D[];
      return [tf.matMul(dy, tf.transpose(ws)), tf.matMul(tf.transpose(xs), dy)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, w: tf.Tensor2D) => tf.Tensor2D;

let linearMode: 'custom' | 'autodiff' = 'custom';

/**
 * Select the gradient of the linear layers: `custom` (default, explicit transposes) or `autodiff` (tfjs's
 * own matMul gradient). Only the benchmark's baseline switches it; both give the same values.
 */
export function setLinearGradient(mode: 'custom' | 'autodiff'): void {
  linearMode = mode;
}

/** `x @ w` for [rows, in] x [in, out], with the gradient chosen by {@link setLinearGradient}. */
export function linear(x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  return linearMode === 'custom' ? customLinear(x, w) : tf.matMul(x, w);
}

/**
 * One-hot embedding lookup `onehot @ table` whose input gradient is skipped (ids are not differentiable);
 * used because `tf.gather` has no gradient kernel on the wasm backend (POLICY-NOTES).
 */
export const embed = tf.customGrad(((onehot: tf.Tensor2D, table: tf.Tensor2D, save: tf.GradSaveFunc) => {
  save([onehot]);
  return {
    value: tf.matMul(onehot, table),
    gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => [tf.zerosLike(saved[0]), tf.matMul(tf.transpose(saved[0] as tf.Tensor2D), dy)],
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (onehot: tf.Tensor2D, table: tf.Tensor2D) => tf.Tensor2D;

/** Layer norm over the last axis (eps 1e-5). */
export function layerNorm(x: tf.Tensor, g: tf.Tensor, b: tf.Tensor): tf.Tensor {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, 1e-5))), g), b);
}

/** GELU, tanh approximation (Hendrycks & Gimpel 2016). */
export function gelu(x: tf.Tensor): tf.Tensor {
  const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.pow(x, 3))));
  return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
}

/** `[rows, D] @ W + b` through {@link linear}. */
export function dense(x: tf.Tensor2D, w: tf.Tensor, b: tf.Tensor | null): tf.Tensor2D {
  const y = linear(x, w as tf.Tensor2D);
  return b ? (tf.add(y, b) as tf.Tensor2D) : y;
}

/** Split heads: [B*T, D] -> [B, H, T, hd]. */
function heads(x: tf.Tensor, B: number, T: number, H: number): tf.Tensor4D {
  const hd = x.shape[x.shape.length - 1] / H;
  return tf.transpose(tf.reshape(x, [B, T, H, hd]), [0, 2, 1, 3]);
}

/**
 * Causal self-attention block (pre-LN). `x` [B*T, D]; `mask` additive, broadcastable to [B, H, Tq, Tk].
 * When `cache` is given, the new keys/values are appended to it (generation) and returned.
 */
export function attention(
  p: ParamMap, l: number, cfg: ModelConfig, x: tf.Tensor2D, B: number, T: number, mask: tf.Tensor,
  cache?: { k: tf.Tensor4D; v: tf.Tensor4D } | null,
): { out: tf.Tensor2D; k: tf.Tensor4D; v: tf.Tensor4D } {
  const D = cfg.dModel;
  const H = cfg.heads;
  const qkv = dense(x, p[`h${l}.wqkv`], p[`h${l}.bqkv`]);
  const [q0, k0, v0] = tf.split(qkv, 3, 1);
  const q = heads(q0, B, T, H);
  let k = heads(k0, B, T, H);
  let v = heads(v0, B, T, H);
  if (cache) {
    k = tf.concat([cache.k, k], 2);
    v = tf.concat([cache.v, v], 2);
  }
  const scores = tf.add(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(D / H)), mask);
  const att = tf.softmax(scores);
  const o = tf.reshape(tf.transpose(tf.matMul(att, v), [0, 2, 1, 3]), [B * T, D]) as tf.Tensor2D;
  return { out: dense(o, p[`h${l}.wo`], p[`h${l}.bo`]), k, v };
}

/** Feed-forward block: W2 · gelu(W1 · x). */
export function mlp(p: ParamMap, l: number, x: tf.Tensor2D): tf.Tensor2D {
  return dense(gelu(dense(x, p[`h${l}.w1`], p[`h${l}.b1`])) as tf.Tensor2D, p[`h${l}.w2`], p[`h${l}.b2`]);
}

/** Additive causal mask [T, T]: 0 on and below the diagonal, -1e9 above. */
export function causalMask(T: number): tf.Tensor2D {
  return tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9) as tf.Tensor2D);
}

/**
 * Training/scoring forward pass over right-padded sequences `ids` [B][T] (positions 0..T-1).
 * Returns log-probabilities [B*T, V] of the next token at every position.
 */
export function forwardLogProbs(p: ParamMap, cfg: ModelConfig, vocab: number, ids: number[][]): tf.Tensor2D {
  const B = ids.length;
  const T = ids[0].length;
  const flat = tf.tensor1d(ids.flat(), 'int32');
  const onehot = tf.cast(tf.oneHot(flat, vocab), 'float32') as tf.Tensor2D;
  let x = embed(onehot, p.wte as tf.Tensor2D);
  const pos = tf.tile(tf.slice(p.wpe, [0, 0], [T, cfg.dModel]), [B, 1]);
  x = tf.add(x, pos) as tf.Tensor2D;
  const mask = causalMask(T);
  for (let l = 0; l < cfg.layers; l++) {
    const a = attention(p, l, cfg, layerNorm(x, p[`h${l}.ln1_g`], p[`h${l}.ln1_b`]) as tf.Tensor2D, B, T, mask);
    x = tf.add(x, a.out) as tf.Tensor2D;
    x = tf.add(x, mlp(p, l, layerNorm(x, p[`h${l}.ln2_g`], p[`h${l}.ln2_b`]) as tf.Tensor2D)) as tf.Tensor2D;
  }
  const h = layerNorm(x, p.lnf_g, p.lnf_b) as tf.Tensor2D;
  return tf.logSoftmax(linear(h, p.wout as tf.Tensor2D)) as tf.Tensor2D;
}

/**
 * Log-probability of each actual next token: [B, T-1] where entry t is log P(ids[t+1] | ids[..t]).
 * Targets are picked with a one-hot product (gather has no gradient kernel on wasm).
 */
export function targetLogProbs(p: ParamMap, cfg: ModelConfig, vocab: number, ids: number[][]): { lp: tf.Tensor2D; logp: tf.Tensor2D } {
  const B = ids.length;
  const T = ids[0].length;
  const logp = forwardLogProbs(p, cfg, vocab, ids);
  const targets = ids.flatMap((row) => [...row.slice(1), 0]);
  const oh = tf.cast(tf.oneHot(tf.tensor1d(targets, 'int32'), vocab), 'float32');
  const lpAll = tf.reshape(tf.sum(tf.mul(logp, oh), 1), [B, T]);
  return { lp: tf.slice(lpAll, [0, 0], [B, T - 1]) as tf.Tensor2D, logp };
}
