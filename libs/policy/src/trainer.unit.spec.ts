import { describe, expect, it } from 'vitest';
import { PolicyModel } from './policy.model';
import { Trainer } from './trainer';
import { PolicyInputError } from './errors';

const CFG = { layers: 1, dModel: 16, heads: 2, context: 48, ffMult: 2 };

describe('Trainer.grpoStep (docs/design/protocol.md §6)', () => {
  it('raises the logprob of a positive-advantage rollout and lowers a negative one; on-policy metrics', async () => {
    const m = await PolicyModel.create(CFG, 2);
    const tok = m.tokenizer;
    const seqs = [tok.encode('What is 1 * 2?<|im_end|>'), tok.encode('What is 3 * 4?<|im_end|>')];
    const lossMask = seqs.map((s) => s.map((_, i) => (i >= 3 ? 1 : 0)));
    const old = m.sequenceLogprobs(seqs);
    const sum = (lp: number[][], b: number) => lp[b].reduce((a, x, t) => a + x * lossMask[b][t], 0);
    const tr = new Trainer(m, { lr: 1e-2, warmupSteps: 0 });
    const metrics = tr.grpoStep({ tokenIds: seqs, lossMask, advantages: [1, -1], oldLogprobs: old });
    // On-policy (old = current): ratio 1 everywhere, nothing clipped, KL 0, loss = -mean(A) over tokens.
    expect(metrics.clipFraction).toBe(0);
    expect(metrics.approxKl).toBeCloseTo(0, 5);
    expect(metrics.entropy).toBeGreaterThan(0);
    expect(metrics.gradNorm).toBeGreaterThan(0);
    expect(metrics.tokens).toBe(lossMask.flat().filter((x) => x === 1).length);
    const after = m.sequenceLogprobs(seqs);
    expect(sum(after, 0)).toBeGreaterThan(sum(old, 0));
    expect(sum(after, 1)).toBeLessThan(sum(old, 1));
    // Off-policy now: a second step on the same batch clips some tokens only when the ratio leaves [0.8, 1.28].
    const again = tr.grpoStep({ tokenIds: seqs, lossMask, advantages: [1, -1], oldLogprobs: old });
    expect(again.approxKl).toBeGreaterThan(0);
    m.dispose();
  });

  it('rejects misaligned batches with the field named', async () => {
    const m = await PolicyModel.create(CFG, 2);
    const tr = new Trainer(m, { lr: 1e-2 });
    const ids = [[1, 2, 3]];
    expect(() => tr.grpoStep({ tokenIds: ids, lossMask: [[0, 1]], advantages: [1], oldLogprobs: [[0, 0, 0]] })).toThrow(/lossMask\[0\]/);
    expect(() => tr.grpoStep({ tokenIds: ids, lossMask: [[0, 1, 1]], advantages: [], oldLogprobs: [[0, 0, 0]] })).toThrow(PolicyInputError);
    expect(() => tr.sftStep({ tokenIds: ids, lossMask: [[1, 0, 0]] })).toThrow(/selects no token/);
    m.dispose();
  });
});
