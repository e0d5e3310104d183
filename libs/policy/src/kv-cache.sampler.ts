import * as tf from '@tensorflow/tfjs';
import type { ModelConfig } from '@rstar/contracts';
import { attention, causalMask, dense, layerNorm, mlp } from './transformer.forward';
import type { ParamMap } from './transformer.params';
import { Rng } from './rng';

/** Sampling parameters of one sequence. */
export interface SamplingOptions {
  /** 0 = greedy. Default 1. */
  temperature?: number;
  /** Nucleus mass in (0, 1]. Default 1. */
  topP?: number;
  /** PRNG seed of this sequence. Default 0. */
  seed?: number;
  /** Max tokens to generate (also capped by the context window). Default 64. */
  maxNewTokens?: number;
  /** Token ids that end the sequence (included in the output). The tokenizer's eos is always one unless `ignoreEos`. */
  stopTokenIds?: number[];
  /** Strings that end the sequence when the generated text ends with them (the tokens stay in the output). */
  stop?: string[];
  ignoreEos?: boolean;
}

/** Result of one generated sequence. `logprobs[i]` is log P(tokenIds[i]) under the raw model (temperature 1, no top-p), the quantity the trainer recomputes. */
export interface GenerationResult {
  tokenIds: number[];
  logprobs: number[];
  finishReason: 'stop' | 'length' | 'abort';
  /** The stop token id or stop string that ended the sequence, else null. */
  matchedStop: number | string | null;
}

interface RowState {
  rng: Rng;
  opts: Required<Omit<SamplingOptions, 'seed'>>;
  stopIds: Set<number>;
  out: GenerationResult;
  done: boolean;
  text: string;
  pos: number;
  budget: number;
}

/** Per-row hooks of a running generation: abort polling and the token text for stop strings. */
export interface SamplerHooks {
  isAborted?: (row: number) => boolean;
  tokenText: (id: number) => string;
  eosId: number;
  /** Called once per decode step (e.g. to yield the event loop). */
  onStep?: () => Promise<void>;
}

function softmaxLog(logits: Float32Array, off: number, V: number, temp: number): Float64Array {
  const out = new Float64Array(V);
  let mx = -Infinity;
  for (let i = 0; i < V; i++) mx = Math.max(mx, logits[off + i] / temp);
  let s = 0;
  for (let i = 0; i < V; i++) s += Math.exp(logits[off + i] / temp - mx);
  const lse = mx + Math.log(s);
  for (let i = 0; i < V; i++) out[i] = logits[off + i] / temp - lse;
  return out;
}

/** Draw from softmax(logits / T) restricted to the top-p nucleus (Holtzman et al. 2020); argmax when T = 0. */
function sampleToken(logits: Float32Array, off: number, V: number, temp: number, topP: number, rng: Rng): number {
  if (temp === 0) {
    let best = 0;
    for (let i = 1; i < V; i++) if (logits[off + i] > logits[off + best]) best = i;
    return best;
  }
  const lp = softmaxLog(logits, off, V, temp);
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => lp[b] - lp[a] || a - b);
  let keep = V;
  if (topP < 1) {
    let cum = 0;
    for (let i = 0; i < V; i++) {
      cum += Math.exp(lp[order[i]]);
      if (cum >= topP) {
        keep = i + 1;
        break;
      }
    }
  }
  let mass = 0;
  for (let i = 0; i < keep; i++) mass += Math.exp(lp[order[i]]);
  let u = rng.next() * mass;
  for (let i = 0; i < keep; i++) {
    u -= Math.exp(lp[order[i]]);
    if (u <= 0) return order[i];
  }
  return order[keep - 1];
}

/**
 * Batched autoregressive sampling with a KV cache (POLICY-NOTES: required, ~100x faster than recomputing).
 * Prompts are left-padded to one length; pad keys are masked out and positions restart at each row's first
 * real token, so a row's result does not depend on the other rows. Shapes: cache k/v [B, H, L, hd].
 */
export async function sampleWithCache(
  p: ParamMap, cfg: ModelConfig, vocab: number, prompts: number[][], opts: SamplingOptions[], hooks: SamplerHooks,
): Promise<GenerationResult[]> {
  const B = prompts.length;
  const Lp = Math.max(...prompts.map((r) => r.length));
  const rows: RowState[] = prompts.map((pr, i) => {
    const o = opts[i];
    const full = {
      temperature: o.temperature ?? 1, topP: o.topP ?? 1, maxNewTokens: o.maxNewTokens ?? 64,
      stopTokenIds: o.stopTokenIds ?? [], stop: o.stop ?? [], ignoreEos: o.ignoreEos ?? false,
    };
    const stopIds = new Set(full.stopTokenIds);
    if (!full.ignoreEos) stopIds.add(hooks.eosId);
    const budget = Math.min(full.maxNewTokens, cfg.context - pr.length);
    return {
      rng: new Rng(o.seed ?? 0), opts: full, stopIds, text: '', pos: pr.length, budget,
      out: { tokenIds: [], logprobs: [], finishReason: 'length', matchedStop: null }, done: budget <= 0,
    };
  });
  if (rows.every((r) => r.done)) return rows.map((r) => r.out);

  const padMaskArr = new Float32Array(B * Lp);
  const padded: number[] = [];
  const positions: number[] = [];
  prompts.forEach((pr, b) => {
    const pad = Lp - pr.length;
    for (let j = 0; j < Lp; j++) {
      padded.push(j < pad ? 0 : pr[j - pad]);
      positions.push(Math.max(0, j - pad));
      padMaskArr[b * Lp + j] = j < pad ? -1e9 : 0;
    }
  });

  let keyMask = tf.tensor(padMaskArr, [B, 1, 1, Lp]);
  let caches: { k: tf.Tensor4D; v: tf.Tensor4D }[] = [];
  const runLayers = (x0: tf.Tensor2D, T: number, mask: tf.Tensor, prev: typeof caches | null): tf.Tensor => {
    let x = x0;
    const next: typeof caches = [];
    for (let l = 0; l < cfg.layers; l++) {
      const a = attention(p, l, cfg, layerNorm(x, p[`h${l}.ln1_g`], p[`h${l}.ln1_b`]) as tf.Tensor2D, B, T, mask, prev ? prev[l] : null);
      next.push({ k: tf.keep(a.k), v: tf.keep(a.v) });
      x = tf.add(x, a.out) as tf.Tensor2D;
      x = tf.add(x, mlp(p, l, layerNorm(x, p[`h${l}.ln2_g`], p[`h${l}.ln2_b`]) as tf.Tensor2D)) as tf.Tensor2D;
    }
    for (const c of caches) tf.dispose([c.k, c.v]);
    caches = next;
    const h = layerNorm(x, p.lnf_g, p.lnf_b) as tf.Tensor2D;
    return linear2(h, p.wout);
  };
  const linear2 = (h: tf.Tensor2D, w: tf.Tensor) => dense(h, w, null);

  // Prefill: the whole left-padded prompt block at once, keep the last position's logits.
  let logits = tf.tidy(() => {
    const x = tf.add(tf.gather(p.wte, tf.tensor1d(padded, 'int32')), tf.gather(p.wpe, tf.tensor1d(positions, 'int32'))) as tf.Tensor2D;
    const mask = tf.add(causalMask(Lp), keyMask);
    const all = runLayers(x, Lp, mask, null);
    return tf.reshape(tf.slice(tf.reshape(all, [B, Lp, vocab]), [0, Lp - 1, 0], [B, 1, vocab]), [B, vocab]);
  });

  try {
    for (;;) {
      const data = (await logits.data()) as Float32Array;
      logits.dispose();
      const nextIds: number[] = [];
      for (let b = 0; b < B; b++) {
        const r = rows[b];
        if (r.done || hooks.isAborted?.(b)) {
          if (!r.done) {
            r.done = true;
            r.out.finishReason = 'abort';
          }
          nextIds.push(0);
          continue;
        }
        const id = sampleToken(data, b * vocab, vocab, r.opts.temperature, r.opts.topP, r.rng);
        const lp = softmaxLog(data, b * vocab, vocab, 1)[id];
        r.out.tokenIds.push(id);
        r.out.logprobs.push(lp);
        r.text += hooks.tokenText(id);
        nextIds.push(id);
        if (r.stopIds.has(id)) {
          r.done = true;
          r.out.finishReason = 'stop';
          r.out.matchedStop = id;
        } else {
          const s = r.opts.stop.find((st) => st.length > 0 && r.text.endsWith(st));
          if (s !== undefined) {
            r.done = true;
            r.out.finishReason = 'stop';
            r.out.matchedStop = s;
          } else if (r.out.tokenIds.length >= r.budget) {
            r.done = true;
            r.out.finishReason = 'length';
          }
        }
      }
      if (rows.every((r) => r.done)) break;
      if (hooks.onStep) await hooks.onStep();
      // Decode one step for every row (finished rows feed a dummy token; their outputs are ignored).
      const pos = rows.map((r) => Math.min(r.pos++, cfg.context - 1));
      const newMask = tf.concat([keyMask, tf.zeros([B, 1, 1, 1])], 3);
      keyMask.dispose();
      keyMask = newMask;
      logits = tf.tidy(() => {
        const x = tf.add(tf.gather(p.wte, tf.tensor1d(nextIds, 'int32')), tf.gather(p.wpe, tf.tensor1d(pos, 'int32'))) as tf.Tensor2D;
        return runLayers(x, 1, keyMask, caches);
      });
    }
  } finally {
    keyMask.dispose();
    for (const c of caches) tf.dispose([c.k, c.v]);
  }
  return rows.map((r) => r.out);
}
