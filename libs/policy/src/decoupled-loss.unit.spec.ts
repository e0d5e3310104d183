import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from './backend';
import { behaviourWeights, grpoLoss } from './policy.losses';
import { PolicyModel } from './policy.model';
import { Trainer } from './trainer';

/** The vectors libs/grpo and workers/trainer assert (libs/grpo/fixtures/shared-vectors.json). */
const fixture = JSON.parse(readFileSync(resolve(__dirname, '../../grpo/fixtures/shared-vectors.json'), 'utf8')) as {
  clip: { epsLow: number; epsHigh: number; dualClip: number };
  sequences: { oldLogprobs: number[]; lossMask: number[]; advantage: number }[];
  decoupled: { cap: number; logpProx: number[][]; logpNew: number[][]; expected: { loss: number; clipFraction: number; dualClipFraction: number; meanWeight: number; cappedFraction: number; tokens: number } };
};

const pad = (rows: number[][]) => {
  const L = Math.max(...rows.map((r) => r.length));
  return tf.tensor2d(rows.map((r) => [...r, ...new Array(L - r.length).fill(0)]));
};

describe('decoupled PPO in the built-in trainer (TensorFlow.js)', () => {
  beforeAll(() => initBackend());

  it('given the shared decoupled vectors, then the tensor loss and weights equal libs/grpo and the worker (float32: 1e-5)', () => {
    const d = fixture.decoupled;
    const seqs = fixture.sequences;
    const out = tf.tidy(() => {
      const behav = pad(seqs.map((s) => s.oldLogprobs));
      const prox = pad(d.logpProx);
      const mask = pad(seqs.map((s) => s.lossMask));
      const adv = pad(seqs.map((s) => s.oldLogprobs.map(() => s.advantage)));
      const w = behaviourWeights(prox, behav, d.cap);
      const r = grpoLoss(pad(d.logpNew), prox, adv, mask, d.expected.tokens, fixture.clip, w);
      return [r.loss.dataSync()[0], r.clippedSum.dataSync()[0], tf.sum(tf.mul(w, mask)).dataSync()[0]];
    });
    expect(Math.abs(out[0] - d.expected.loss)).toBeLessThan(1e-5);
    // libs/policy counts a token as clipped when either bound cuts its gradient (clip or dual clip; disjoint sets).
    expect(out[1] / d.expected.tokens).toBeCloseTo(d.expected.clipFraction + d.expected.dualClipFraction, 6);
    expect(Math.abs(out[2] / d.expected.tokens - d.expected.meanWeight)).toBeLessThan(1e-5);
  });

  it('given behaviour == proximal, then a decoupled step is exactly the on-policy step; given stale behaviour logprobs, then rho stays 1 and the weights carry the correction', async () => {
    const CFG = { layers: 1, dModel: 16, heads: 2, context: 48, ffMult: 2 };
    const [a, b] = [await PolicyModel.create(CFG, 3), await PolicyModel.create(CFG, 3)];
    const tok = a.tokenizer;
    const seqs = [tok.encode('What is 5 * 2?<|im_end|>'), tok.encode('What is 7 * 4?<|im_end|>')];
    const lossMask = seqs.map((s) => s.map((_, i) => (i >= 3 ? 1 : 0)));
    const own = a.sequenceLogprobs(seqs);
    const batch = { tokenIds: seqs, lossMask, advantages: [1, -1], oldLogprobs: own };
    const on = new Trainer(a, { lr: 1e-2, warmupSteps: 0 }).grpoStep(batch);
    const dec = new Trainer(b, { lr: 1e-2, warmupSteps: 0, decoupled: true, tisCap: 2 }).grpoStep(batch);
    expect(dec.loss).toBe(on.loss);
    expect(dec.gradNorm).toBe(on.gradNorm);
    expect(dec.tis).toEqual({ cap: 2, meanWeight: 1, cappedFraction: 0 });
    expect(b.sequenceLogprobs(seqs)).toEqual(a.sequenceLogprobs(seqs));

    // Behaviour logprobs from an older policy (here: 0.9 nats lower on every model token): the plain loss
    // sees rho = e^0.9 and clips; decoupled PPO centres the clip on the proximal policy (rho = 1, nothing
    // clipped) and weights each token by min(e^0.9, 2) = 2.
    const stale = seqs.map((s, k) => b.sequenceLogprobs([s])[0].map((x, t) => (lossMask[k][t] ? x - 0.9 : x)));
    const staleBatch = { ...batch, oldLogprobs: stale };
    const plain = new Trainer(a, { lr: 1e-2, warmupSteps: 0 }).grpoStep(staleBatch);
    const corrected = new Trainer(b, { lr: 1e-2, warmupSteps: 0, decoupled: true, tisCap: 2 }).grpoStep(staleBatch);
    expect(plain.clipFraction).toBeGreaterThan(0);
    expect(corrected.clipFraction).toBe(0);
    expect(corrected.tis!.cappedFraction).toBe(1);
    expect(corrected.tis!.meanWeight).toBeCloseTo(2, 6);
    a.dispose();
    b.dispose();
  });

  it('given a cap below 1, then the trainer refuses it naming tisCap', async () => {
    const m = await PolicyModel.create({ layers: 1, dModel: 16, heads: 2, context: 48, ffMult: 2 }, 1);
    expect(() => new Trainer(m, { lr: 1e-2, decoupled: true, tisCap: 0.5 })).toThrow(/tisCap/);
    m.dispose();
  });
});
