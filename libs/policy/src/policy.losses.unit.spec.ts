import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { grpoLoss } from './policy.losses';
import { initBackend } from './backend';

/** Scalar reference of docs/design/protocol.md §6, written independently of the tensor code. */
function refToken(lp: number, old: number, a: number): { loss: number; clipped: boolean } {
  const r = Math.exp(Math.max(-20, Math.min(20, lp - old)));
  const s1 = r * a;
  const s2 = Math.max(0.8, Math.min(1.28, r)) * a;
  let loss = -Math.min(s1, s2);
  let clipped = s2 < s1;
  if (a < 0 && loss > -3 * a) {
    loss = -3 * a;
    clipped = true;
  }
  return { loss, clipped };
}

describe('GRPO-RoC token loss (docs/design/protocol.md §6)', () => {
  beforeAll(() => initBackend());

  it('matches the scalar reference: clip-higher, dual clip, ratio clamp, token-mean over the mask', () => {
    const lp = [[-1, -0.5, -2, -0.1], [-3, -0.2, -0.3, -30]];
    const old = [[-1, -1, -1, -1], [-0.5, -0.2, -0.9, -1]];
    const adv = [1.5, -0.8];
    const mask = [[1, 1, 1, 0], [1, 1, 1, 1]];
    const denom = 7;
    let want = 0;
    let clippedWant = 0;
    lp.forEach((row, b) => row.forEach((v, t) => {
      if (!mask[b][t]) return;
      const r = refToken(v, old[b][t], adv[b]);
      want += r.loss;
      clippedWant += r.clipped ? 1 : 0;
    }));
    const out = tf.tidy(() => {
      const r = grpoLoss(tf.tensor2d(lp), tf.tensor2d(old), tf.tensor2d(adv.map((a) => [a, a, a, a])), tf.tensor2d(mask), denom, { epsLow: 0.2, epsHigh: 0.28, dualClip: 3 });
      return [r.loss.dataSync()[0], r.clippedSum.dataSync()[0]];
    });
    expect(out[0]).toBeCloseTo(want / denom, 5);
    expect(out[1]).toBe(clippedWant);
    expect(clippedWant).toBeGreaterThan(0);
  });
});
