import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { PolicyModel } from './policy.model';
import { grpoLoss, sftLoss } from './policy.losses';
import { targetLogProbs } from './transformer.forward';
import { Rng } from './rng';

const CFG = { layers: 1, dModel: 8, heads: 2, context: 16, ffMult: 2 };

/**
 * Central finite differences vs the analytic gradient (incl. the custom linear/embedding gradients) on a
 * tiny config. Weights are re-drawn with std 0.5 so every gradient is well above float32 noise.
 */
describe('transformer gradients vs finite differences', () => {
  let model: PolicyModel;
  const rng = new Rng(7);
  const ids = [
    [1, 20, 33, 40, 55, 60, 71, 12, 3],
    [5, 90, 14, 100, 22, 7, 0, 0, 0],
  ];
  const mask = [
    [0, 0, 1, 1, 1, 1, 1, 1, 1],
    [0, 1, 1, 1, 0, 1, 0, 0, 0],
  ];

  beforeAll(async () => {
    model = await PolicyModel.create(CFG, 3);
    for (const v of model.variables()) {
      const n = v.size;
      v.assign(tf.tensor(Float32Array.from({ length: n }, () => rng.normal() * 0.5), v.shape));
    }
  });

  function check(lossFn: () => tf.Scalar): void {
    const vars = model.variables();
    const { grads } = tf.variableGrads(lossFn, vars);
    const lossAt = () => tf.tidy(() => lossFn().dataSync()[0]);
    let checked = 0;
    for (const v of vars) {
      const g = grads[v.name].dataSync();
      const vals = new Float32Array(v.dataSync());
      // Two coordinates per tensor: the largest-gradient one and a random one.
      let big = 0;
      for (let i = 1; i < g.length; i++) if (Math.abs(g[i]) > Math.abs(g[big])) big = i;
      for (const i of [big, Math.floor(rng.next() * g.length)]) {
        const eps = 1e-2;
        const orig = vals[i];
        vals[i] = orig + eps;
        v.assign(tf.tensor(vals, v.shape));
        const up = lossAt();
        vals[i] = orig - eps;
        v.assign(tf.tensor(vals, v.shape));
        const down = lossAt();
        vals[i] = orig;
        v.assign(tf.tensor(vals, v.shape));
        const fd = (up - down) / (2 * eps);
        const err = Math.abs(fd - g[i]) / Math.max(1e-2, Math.abs(fd) + Math.abs(g[i]));
        expect(err, `${v.name}[${i}] analytic ${g[i]} vs finite difference ${fd}`).toBeLessThan(2e-2);
        checked++;
      }
    }
    for (const k of Object.keys(grads)) grads[k].dispose();
    expect(checked).toBe(2 * vars.length);
  }

  it('SFT loss (masked NLL): every parameter tensor', () => {
    const m = tf.tensor2d(mask.map((r) => r.slice(1)));
    const denom = mask.flatMap((r) => r.slice(1)).reduce((a, b) => a + b, 0);
    check(() => sftLoss(targetLogProbs(model.params, model.config, model.tokenizer.vocabSize, ids).lp, m, denom));
  });

  it('GRPO-RoC loss (ratio inside the clip range): every parameter tensor', () => {
    const m = tf.tensor2d(mask.map((r) => r.slice(1)));
    const cur = tf.tidy(() => targetLogProbs(model.params, model.config, model.tokenizer.vocabSize, ids).lp);
    const old = tf.keep(tf.add(cur, tf.tensor2d(ids.map((r) => r.slice(1).map(() => (rng.next() - 0.5) * 0.1)))));
    const adv = tf.tensor2d([[1.3], [-0.7]]).tile([1, ids[0].length - 1]) as tf.Tensor2D;
    check(() => grpoLoss(targetLogProbs(model.params, model.config, model.tokenizer.vocabSize, ids).lp, old as tf.Tensor2D, adv, m, 10, { epsLow: 0.2, epsHigh: 0.28, dualClip: 3 }).loss);
  });
});
