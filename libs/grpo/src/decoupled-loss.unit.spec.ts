import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clippedLossStats, clippedTokenLoss, DEFAULT_CLIP } from './clipped-loss';
import { behaviourWeight, decoupledLossStats, decoupledTokenLoss } from './decoupled-loss';
import { GrpoInputError } from './errors';
import type { TrainingSequence } from './training-batch.builder';

const fixture = JSON.parse(readFileSync(resolve(__dirname, '../fixtures/shared-vectors.json'), 'utf8')) as {
  clip: { epsLow: number; epsHigh: number; dualClip: number };
  sequences: TrainingSequence[];
  logpNew: number[][];
  expected: { loss: number; clipFraction: number; dualClipFraction: number; approxKl: number; tokens: number };
  decoupled: {
    cap: number;
    logpProx: number[][];
    logpNew: number[][];
    expected: { loss: number; clipFraction: number; dualClipFraction: number; approxKl: number; tokens: number; meanWeight: number; cappedFraction: number };
  };
};

describe('decoupled PPO loss (off-policy correction, shared vectors with workers/trainer)', () => {
  it('given the fixture behaviour, proximal and new logprobs, then every metric matches the committed values to 1e-6', () => {
    const d = fixture.decoupled;
    const s = decoupledLossStats(
      fixture.sequences.map((q, i) => ({ logpNew: d.logpNew[i], logpProx: d.logpProx[i], logpBehav: q.oldLogprobs, mask: q.lossMask, advantage: q.advantage })),
      d.cap,
      fixture.clip,
    );
    for (const k of ['loss', 'clipFraction', 'dualClipFraction', 'approxKl', 'meanWeight', 'cappedFraction'] as const) {
      expect(Math.abs(s[k] - d.expected[k]), k).toBeLessThan(1e-6);
    }
    expect(s.tokens).toBe(d.expected.tokens);
    // The vectors reach the cap, weights below 1 and every clip branch.
    expect(s.cappedFraction).toBeGreaterThan(0);
    expect(s.cappedFraction).toBeLessThan(1);
    expect(s.clipFraction).toBeGreaterThan(0);
    expect(s.dualClipFraction).toBeGreaterThan(0);
  });

  it('given proximal == behaviour, then it is exactly the on-policy loss of the existing vectors', () => {
    const seqs = fixture.sequences.map((q, i) => ({ logpNew: fixture.logpNew[i], logpProx: q.oldLogprobs, logpBehav: q.oldLogprobs, mask: q.lossMask, advantage: q.advantage }));
    const s = decoupledLossStats(seqs, 5, fixture.clip);
    const on = clippedLossStats(seqs.map((q) => ({ logpNew: q.logpNew, logpOld: q.logpBehav, mask: q.mask, advantage: q.advantage })), fixture.clip);
    expect({ loss: s.loss, clipFraction: s.clipFraction, dualClipFraction: s.dualClipFraction, approxKl: s.approxKl, tokens: s.tokens }).toEqual(on);
    expect(Math.abs(on.loss - fixture.expected.loss)).toBeLessThan(1e-6);
    expect(s.meanWeight).toBe(1);
    expect(s.cappedFraction).toBe(0);
  });

  it('given a stale token, then the weight is pi_prox / pi_behav, bounded by the cap, and scales the clipped loss against the proximal policy', () => {
    expect(behaviourWeight(-1, -1.5, null)).toBeCloseTo(Math.exp(0.5), 12);
    expect(behaviourWeight(-1, -4, 5)).toBe(5);
    expect(behaviourWeight(-4, -1, 5)).toBeCloseTo(Math.exp(-3), 12);
    const t = decoupledTokenLoss(-0.5, -1, -1.5, 2, 5, DEFAULT_CLIP);
    expect(t.loss).toBeCloseTo(Math.exp(0.5) * clippedTokenLoss(-0.5, -1, 2).loss, 12);
    expect(t.clipped).toBe(true);
  });

  it('given arrays of different lengths or a cap below 1, then GrpoInputError names the field', () => {
    const bad = [{ logpNew: [0, 0], logpProx: [0], logpBehav: [0, 0], mask: [1, 1], advantage: 1 }];
    expect(() => decoupledLossStats(bad, null)).toThrow(GrpoInputError);
    expect(() => decoupledLossStats([], 0.5)).toThrow(/cap must be >= 1/);
  });
});
