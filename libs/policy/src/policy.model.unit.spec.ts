import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PolicyModel } from './policy.model';
import { Trainer } from './trainer';
import { CheckpointError, ContextOverflowError, PolicyInputError } from './errors';

const CFG = { layers: 1, dModel: 16, heads: 2, context: 48, ffMult: 2 };
const tmp = mkdtempSync(join(tmpdir(), 'rstar-policy-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function batch(model: PolicyModel) {
  const tok = model.tokenizer;
  const seqs = ['<|im_start|>user\nWhat is 12 * 34?<|im_end|>', '<|im_start|>user\nWhat is the gcd of 4 and 6?<|im_end|>'].map((s) => tok.encode(s));
  return { tokenIds: seqs, lossMask: seqs.map((s) => s.map((_, i) => (i >= 3 ? 1 : 0))) };
}

describe('PolicyModel', () => {
  it('is deterministic given the seed: weights, training and sampling', async () => {
    const run = async (seed: number) => {
      const m = await PolicyModel.create(CFG, seed);
      const tr = new Trainer(m, { lr: 1e-2, warmupSteps: 1 });
      const losses = [0, 1, 2].map(() => tr.sftStep(batch(m)).loss);
      const g = await m.generate([m.tokenizer.encode('What is ')], { temperature: 1, seed: 11, maxNewTokens: 12, ignoreEos: true });
      const w = m.weights()[2].slice(0, 8);
      m.dispose();
      return { losses, tokens: g[0].tokenIds, w: Array.from(w) };
    };
    const a = await run(1);
    const b = await run(1);
    const c = await run(2);
    expect(b).toEqual(a);
    expect(c.w).not.toEqual(a.w);
    expect(a.losses[2]).toBeLessThan(a.losses[0]);
  });

  it('KV-cache sampling logprobs equal a full forward pass, and a row does not depend on its batch', async () => {
    const m = await PolicyModel.create(CFG, 5);
    const tok = m.tokenizer;
    const p1 = tok.encode('What is 3 * 4?');
    const p2 = tok.encode('Hi');
    const alone = await m.generate([p2], [{ temperature: 0.8, seed: 9, maxNewTokens: 10, ignoreEos: true }]);
    const both = await m.generate([p1, p2], [{ temperature: 0.8, seed: 1, maxNewTokens: 10, ignoreEos: true }, { temperature: 0.8, seed: 9, maxNewTokens: 10, ignoreEos: true }]);
    expect(both[1].tokenIds).toEqual(alone[0].tokenIds);
    const full = m.sequenceLogprobs([[...p1, ...both[0].tokenIds]])[0].slice(p1.length);
    full.forEach((lp, i) => expect(lp).toBeCloseTo(both[0].logprobs[i], 4));
    expect(both[0].finishReason).toBe('length');
    m.dispose();
  });

  it('stops at a stop string, a stop token and the context window', async () => {
    const m = await PolicyModel.create(CFG, 5);
    const p = m.tokenizer.encode('What is');
    const [free] = await m.generate([p], { temperature: 0, maxNewTokens: 6, ignoreEos: true });
    const firstText = m.tokenizer.tokenText(free.tokenIds[1]);
    const [byString] = await m.generate([p], { temperature: 0, maxNewTokens: 6, ignoreEos: true, stop: [firstText] });
    expect(byString.finishReason).toBe('stop');
    expect(byString.matchedStop).toBe(firstText);
    const [byId] = await m.generate([p], { temperature: 0, maxNewTokens: 6, stopTokenIds: [free.tokenIds[0]] });
    expect(byId).toMatchObject({ finishReason: 'stop', matchedStop: free.tokenIds[0], tokenIds: [free.tokenIds[0]] });
    const [ctx] = await m.generate([p], { temperature: 0, maxNewTokens: 1000, ignoreEos: true });
    expect(ctx.tokenIds.length).toBe(CFG.context - p.length);
    await expect(m.generate([new Array(CFG.context + 1).fill(5)])).rejects.toThrow(ContextOverflowError);
    await expect(m.generate([p], { topP: 0 })).rejects.toThrow(PolicyInputError);
    m.dispose();
  });

  it('checkpoints round-trip weights, optimizer state and hash; training resumes identically', async () => {
    const m = await PolicyModel.create(CFG, 3);
    const tr = new Trainer(m, { lr: 1e-2, warmupSteps: 2 });
    tr.sftStep(batch(m));
    const dir = join(tmp, 'ck');
    const { hash } = m.save(dir, { note: 'x' });
    expect(hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    const continued = tr.sftStep(batch(m)).loss;

    const loaded = await PolicyModel.load(dir);
    expect(loaded.hash).toBe(hash);
    expect(loaded.meta).toEqual({ note: 'x' });
    const tr2 = new Trainer(loaded, { lr: 1e-2, warmupSteps: 2 });
    expect(tr2.step).toBe(1);
    expect(tr2.sftStep(batch(loaded)).loss).toBe(continued);
    expect(loaded.weights()).toEqual(m.weights());
    // Same weights saved twice give the same content hash; a second save replaces the first atomically.
    expect(loaded.save(join(tmp, 'ck2')).hash).toBe(m.save(join(tmp, 'ck2')).hash);
    m.dispose();
    loaded.dispose();
  });

  it('refuses a corrupt or missing checkpoint', async () => {
    const m = await PolicyModel.create(CFG, 3);
    const dir = join(tmp, 'bad');
    m.save(dir);
    const w = readFileSync(join(dir, 'weights.bin'));
    w[10] ^= 0xff;
    writeFileSync(join(dir, 'weights.bin'), w);
    await expect(PolicyModel.load(dir)).rejects.toThrow(CheckpointError);
    await expect(PolicyModel.load(join(tmp, 'nope'))).rejects.toThrow(/model.json missing/);
    m.dispose();
  });
});
