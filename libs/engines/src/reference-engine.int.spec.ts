import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelTokenizer } from '@rstar/agent';
import { ensureTinyModel, workersPythonForTests, startReferenceEngine, type PythonProcess } from '@rstar/workers';
import { EnginePool } from './engine.pool';
import { EngineResponseError, EngineUnsupportedError } from './engine.errors';
import { SglangAdapter } from './sglang.adapter';
import { VllmAdapter } from './vllm.adapter';
import { WeightSyncError } from './weight-sync';

const python = workersPythonForTests();
const CACHE = resolve(__dirname, '../../../.rstar/models');
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** A checkpoint directory as the trainer worker writes one: the model's files, manifest.json (sha256 of each), STABLE. */
function checkpointOf(model: string, dir: string, policyVersion: number): string {
  cpSync(model, dir, { recursive: true });
  const files: Record<string, { sha256: string; bytes: number }> = {};
  for (const f of readdirSync(dir).sort()) files[f] = { sha256: sha(readFileSync(join(dir, f))), bytes: statSync(join(dir, f)).size };
  const manifest = JSON.stringify({ files, format: 'rstar.checkpoint-manifest/1', policyVersion, runId: 'engines-test', step: policyVersion - 1 }, null, 1) + '\n';
  writeFileSync(join(dir, 'manifest.json'), manifest);
  writeFileSync(join(dir, 'STABLE'), '');
  return sha(manifest);
}

describe.skipIf(!python)('SGLang and vLLM adapters against the reference engine (workers/trainer) as a real server', () => {
  let model: string;
  let tmp: string;
  let engine: PythonProcess;
  let tok: ModelTokenizer;
  let prompt: number[];

  beforeAll(async () => {
    model = await ensureTinyModel(CACHE);
    tmp = mkdtempSync(join(tmpdir(), 'rstar-refengine-'));
    engine = await startReferenceEngine({ model, kvCapacityTokens: 4096, threads: 1 });
    tok = ModelTokenizer.load(model);
    prompt = tok.encode(tok.renderer.renderPrompt('What is 12 * 34?', { compact: true }));
  }, 300_000);
  afterAll(async () => {
    await engine?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('SGLang: KV capacity from server info, the tokenizer hash of the model, token ids in and token ids + logprobs out, seeded', async () => {
    const a = new SglangAdapter('sglang-0', engine.url);
    expect(await a.serverInfo()).toEqual({ kvCapacityTokens: 4096 });
    const info = await a.modelInfo();
    expect(info.tokenizerHash).toBe(tok.hash);
    const req = { rid: 'r1', inputIds: prompt, sampling: { temperature: 1, topP: 1, seed: 7, maxNewTokens: 24 } };
    const g = await a.generate(req);
    expect(g.tokenIds.length).toBeGreaterThan(0);
    expect(g.tokenIds.length).toBeLessThanOrEqual(24);
    expect(g.logprobs).toHaveLength(g.tokenIds.length);
    for (const lp of g.logprobs) expect(lp).toBeLessThanOrEqual(0);
    expect(g.weightVersion).toBe('default');
    expect(g.finishReason === 'stop' ? g.tokenIds.at(-1) : tok.eosTokenId).toBe(tok.eosTokenId);
    expect((await a.generate({ ...req, rid: 'r2' })).tokenIds).toEqual(g.tokenIds);
  });

  it('SGLang: update_weights_from_disk with a weight version; the engine reports it and the manifest hash; a wrong one is caught', async () => {
    const a = new SglangAdapter('sglang-0', engine.url);
    const ck = join(tmp, 'v1');
    const hash = checkpointOf(model, ck, 1);
    expect(await a.updateWeights(ck, { version: 1 })).toEqual({ weightVersion: '1', manifestHash: hash });
    expect(await a.loadedWeights()).toEqual({ weightVersion: '1', manifestHash: hash });
    expect((await a.generate({ rid: 'r3', inputIds: prompt, sampling: { temperature: 1, topP: 1, seed: 1, maxNewTokens: 4 } })).weightVersion).toBe('1');
    const pool = await EnginePool.create([a], 'kv-budget', { probeIntervalMs: 0 });
    try {
      await pool.updateWeights(ck, { version: 2, checkpointHash: hash });
      await pool.verifyWeights({ version: 2, checkpointHash: hash });
      await expect(pool.verifyWeights({ version: 3, checkpointHash: hash })).rejects.toThrowError(WeightSyncError);
      await expect(pool.verifyWeights({ version: 2, checkpointHash: 'f'.repeat(64) })).rejects.toThrowError(/manifest/);
      // A checkpoint whose manifest does not match its files is refused by the engine, and it keeps its weights.
      const bad = join(tmp, 'bad');
      checkpointOf(model, bad, 4);
      writeFileSync(join(bad, 'config.json'), readFileSync(join(bad, 'config.json'), 'utf8') + ' ');
      await expect(a.updateWeights(bad, { version: 4 })).rejects.toThrowError(EngineResponseError);
      expect(await a.loadedWeights()).toEqual({ weightVersion: '2', manifestHash: hash });
    } finally {
      pool.close();
    }
  });

  it('vLLM: /v1/completions with token ids gives the same seeded tokens and logprobs; KV capacity from /metrics; reload = the server serving the checkpoint', async () => {
    const s = new SglangAdapter('sglang-0', engine.url);
    const v = new VllmAdapter('vllm-0', engine.url);
    expect(await v.serverInfo()).toEqual({ kvCapacityTokens: 4096 });
    const sampling = { temperature: 1, topP: 1, seed: 11, maxNewTokens: 16 };
    const a = await s.generate({ rid: 'x1', inputIds: prompt, sampling });
    const b = await v.generate({ rid: 'x2', inputIds: prompt, sampling });
    expect(b.tokenIds).toEqual(a.tokenIds);
    expect(b.logprobs.map((x) => x.toFixed(5))).toEqual(a.logprobs.map((x) => x.toFixed(5)));
    const served = (await v.modelInfo()).modelPath!;
    expect(await v.updateWeights(served)).toEqual({ weightVersion: null, manifestHash: null });
    await expect(v.updateWeights(join(tmp, 'elsewhere'))).rejects.toThrowError(EngineUnsupportedError);
    await expect(v.updateWeights(join(tmp, 'elsewhere'))).rejects.toThrowError(/restart it on the checkpoint/);
  });
});
