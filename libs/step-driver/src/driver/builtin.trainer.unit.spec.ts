import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildTrainingBatch, clippedLossStats } from '@rstar/grpo';
import { PolicyModel, Trainer as PolicyTrainer } from '@rstar/policy';
import { BuiltinTrainer } from './builtin.trainer';

const dir = mkdtempSync(join(tmpdir(), 'rstar-builtin-trainer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('BuiltinTrainer', () => {
  it('given a batch with the sampling logprobs of the current weights, then its first-step loss matches the reference math and the version advances', async () => {
    const model = await PolicyModel.create({ layers: 1, dModel: 16, heads: 2, context: 32, ffMult: 1 }, 3);
    const prompt = [1, 2, 3];
    const response = [4, 5, 6, 7];
    const logp = model.sequenceLogprobs([[...prompt, ...response]])[0];
    const rollout = (id: string, reward: number) => ({
      rolloutId: id, reward, promptTokenIds: prompt, responseTokenIds: response,
      logprobs: logp.slice(prompt.length), lossMask: [1, 1, 0, 1],
    });
    const batch = buildTrainingBatch([{ groupId: 'g', rollouts: [rollout('a', 1), rollout('b', 0)] }]);
    const t = new BuiltinTrainer(model, new PolicyTrainer(model, { lr: 1e-3 }), 4);
    const m = await t.trainStep(batch);
    const ref = clippedLossStats(batch.sequences.map((s) => ({ logpNew: s.oldLogprobs, logpOld: s.oldLogprobs, mask: s.lossMask, advantage: s.advantage })));
    expect(m.loss).toBeCloseTo(ref.loss, 4);
    expect(m.clipFraction).toBe(0);
    expect(t.version).toBe(5);
    const ck = await t.save(join(dir, 'step-0'));
    expect(ck.hash).toMatch(/\S/);
    expect(ck.uri).toBe(join(dir, 'step-0'));
    model.dispose();
  });
});
