import { describe, expect, it } from 'vitest';
import { buildTrainingBatch, clippedLossStats, clippedTokenLoss, entropyFromLogits, groupAdvantages, GrpoInputError } from './index';

describe('groupAdvantages', () => {
  it('given rewards [1,0,0,1], then A = (r - 0.5) / (std_unbiased + 1e-6)', () => {
    const { advantages, mean, std } = groupAdvantages([1, 0, 0, 1]);
    expect(mean).toBe(0.5);
    expect(std).toBeCloseTo(Math.sqrt(1 / 3), 12);
    expect(advantages[0]).toBeCloseTo(0.5 / (Math.sqrt(1 / 3) + 1e-6), 12);
    expect(advantages[1]).toBeCloseTo(-advantages[0], 12);
  });
  it('given a group of one, then mean 0 and std 1', () => {
    expect(groupAdvantages([1])).toEqual({ advantages: [1 / (1 + 1e-6)], mean: 0, std: 1 });
  });
  it('given equal rewards, then every advantage is 0', () => {
    expect(groupAdvantages([1, 1, 1]).advantages).toEqual([0, 0, 0]);
  });
  it('given a non-finite reward, then it throws naming the index', () => {
    expect(() => groupAdvantages([1, NaN])).toThrow(/rewards\[1\]/);
  });
});

describe('clippedTokenLoss', () => {
  it('given rho = 1, then loss = -A and nothing is clipped', () => {
    expect(clippedTokenLoss(-1, -1, 2)).toEqual({ loss: -2, ratio: 1, clipped: false, dualClipped: false });
  });
  it('given A > 0 and rho above 1 + 0.28, then the ratio is clipped at 1.28', () => {
    const r = clippedTokenLoss(Math.log(2), 0, 1);
    expect(r.loss).toBeCloseTo(-1.28, 12);
    expect(r.clipped).toBe(true);
  });
  it('given A > 0 and rho below 1 - 0.2, then the unclipped term binds (min takes it)', () => {
    const r = clippedTokenLoss(Math.log(0.5), 0, 1);
    expect(r.loss).toBeCloseTo(-0.5, 12);
    expect(r.clipped).toBe(false);
  });
  it('given A < 0 and rho below 0.8, then the ratio is clipped at 0.8', () => {
    const r = clippedTokenLoss(Math.log(0.5), 0, -1);
    expect(r.loss).toBeCloseTo(0.8, 12);
    expect(r.clipped).toBe(true);
  });
  it('given A < 0 and rho = 5, then the dual clip bounds the loss at -3A', () => {
    const r = clippedTokenLoss(Math.log(5), 0, -1);
    expect(r.loss).toBeCloseTo(3, 12);
    expect(r.dualClipped).toBe(true);
  });
  it('given a log-ratio of 100, then it is clamped to 20 before exp', () => {
    expect(clippedTokenLoss(100, 0, 1).ratio).toBe(Math.exp(20));
  });
});

describe('clippedLossStats', () => {
  it('given two sequences, then the loss is a token mean over masked tokens only', () => {
    const s = clippedLossStats([
      { logpNew: [0, -1, -1], logpOld: [0, -1, -1], mask: [0, 1, 1], advantage: 1 },
      { logpNew: [-2], logpOld: [-2], mask: [1], advantage: -1 },
    ]);
    expect(s.tokens).toBe(3);
    expect(s.loss).toBeCloseTo((-1 - 1 + 1) / 3, 12);
    expect(s.clipFraction).toBe(0);
    expect(s.approxKl).toBe(0);
  });
  it('given a moved policy, then approx KL is positive and the clip fraction counts the clipped tokens', () => {
    const s = clippedLossStats([{ logpNew: [Math.log(2), 0], logpOld: [0, 0], mask: [1, 1], advantage: 1 }]);
    expect(s.clipFraction).toBe(0.5);
    expect(s.approxKl).toBeCloseTo((2 - 1 - Math.log(2)) / 2, 12);
  });
  it('given mismatched lengths, then it throws', () => {
    expect(() => clippedLossStats([{ logpNew: [0], logpOld: [], mask: [1], advantage: 1 }])).toThrow(GrpoInputError);
  });
});

describe('entropyFromLogits', () => {
  it('given uniform logits over 4 classes, then H = ln 4; given one dominant logit, then H ~ 0', () => {
    expect(entropyFromLogits([3, 3, 3, 3])).toBeCloseTo(Math.log(4), 12);
    expect(entropyFromLogits([1000, 0, 0])).toBeLessThan(1e-9);
  });
});

describe('buildTrainingBatch', () => {
  const rollout = (id: string, reward: number) => ({
    rolloutId: id, reward, promptTokenIds: [5, 6], responseTokenIds: [7, 8, 9], logprobs: [-0.1, -0.5, -0.2], lossMask: [1, 0, 1],
  });
  it('given a group, then sequences are prompt+response with masked prompt and tool tokens and group advantages', () => {
    const b = buildTrainingBatch([{ groupId: 'g0', rollouts: [rollout('a', 1), rollout('b', 0)] }]);
    expect(b.sequences[0].tokenIds).toEqual([5, 6, 7, 8, 9]);
    expect(b.sequences[0].lossMask).toEqual([0, 0, 1, 0, 1]);
    expect(b.sequences[0].oldLogprobs).toEqual([0, 0, -0.1, 0, -0.2]);
    expect(b.sequences[0].advantage).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-6), 9);
    expect(b.sequences[1].advantage).toBeCloseTo(-b.sequences[0].advantage, 12);
    expect(b.tokens).toBe(4);
    expect(b.advantageMean).toBeCloseTo(0, 12);
    expect(b.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(buildTrainingBatch([{ groupId: 'g0', rollouts: [rollout('a', 1), rollout('b', 0)] }]).hash).toBe(b.hash);
  });
  it('given advantages per group, then each group is normalised on its own', () => {
    const b = buildTrainingBatch([
      { groupId: 'g0', rollouts: [rollout('a', 1), rollout('b', 0)] },
      { groupId: 'g1', rollouts: [rollout('c', 1)] },
    ]);
    expect(b.sequences[2].advantage).toBeCloseTo(1, 5);
  });
  it('given mismatched response arrays, then it throws naming the rollout', () => {
    expect(() => buildTrainingBatch([{ groupId: 'g', rollouts: [{ ...rollout('a', 1), lossMask: [1] }] }])).toThrow(/rollout a/);
  });
});
