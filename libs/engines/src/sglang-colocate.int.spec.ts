import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyModel, workersPythonForTests, startReferenceEngine, type PythonProcess } from '@rstar/workers';
import { createEngines } from './engine.factory';
import { EngineUnavailableError } from './engine.errors';
import { SglangAdapter } from './sglang.adapter';

const python = workersPythonForTests();
const CACHE = resolve(__dirname, '../../../.rstar/models');

async function serverInfo(url: string): Promise<{ memory_released: string[]; weights_on_meta: boolean; memory_releases: number; weight_updates: number }> {
  return (await (await fetch(`${url}/get_server_info`)).json()) as never;
}

describe.skipIf(!python)('colocated SGLang engine: memory released and resumed around each weight update (reference engine process)', () => {
  let model: string;
  let tmp: string;
  let engine: PythonProcess;

  beforeAll(async () => {
    model = await ensureTinyModel(CACHE);
    tmp = mkdtempSync(join(tmpdir(), 'rstar-colocate-'));
    engine = await startReferenceEngine({ model, kvCapacityTokens: 4096, threads: 1 });
  }, 300_000);
  afterAll(async () => {
    await engine?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('a colocate=1 adapter releases weights + KV cache, resumes weights, loads, resumes the KV cache; the engine then serves the new version', async () => {
    const [a] = createEngines([`sglang=${engine.url}?colocate=1`]) as SglangAdapter[];
    const req = { rid: 'c1', inputIds: [5, 17, 42, 99, 3], sampling: { temperature: 1, topP: 1, seed: 3, maxNewTokens: 8 } };
    const before = await a!.generate(req);
    const ck = join(tmp, 'v1');
    cpSync(model, ck, { recursive: true });
    const start = await serverInfo(engine.url);
    expect(await a!.updateWeights(ck, { version: 1 })).toMatchObject({ weightVersion: '1' });
    const info = await serverInfo(engine.url);
    expect(info.memory_releases).toBe(start.memory_releases + 1);
    expect(info.weight_updates).toBe(start.weight_updates + 1);
    expect(info.memory_released).toEqual([]);
    expect(info.weights_on_meta).toBe(false);
    const after = await a!.generate({ ...req, rid: 'c2' });
    expect(after.tokenIds).toEqual(before.tokenIds);
    expect(after.weightVersion).toBe('1');

    // A plain adapter updates without releasing anything.
    const plain = new SglangAdapter('plain', engine.url);
    await plain.updateWeights(ck, { version: 2 });
    expect((await serverInfo(engine.url)).memory_releases).toBe(info.memory_releases);
  });

  it('a failed load still gives the KV cache back; generation is refused only while released', async () => {
    const a = new SglangAdapter('col', engine.url, { attempts: 2, baseMs: 5, maxMs: 20, timeoutMs: 60_000 }, 'sglang', null, { colocate: true });
    await expect(a.updateWeights(join(tmp, 'missing'), { version: 9 })).rejects.toThrow(/weight update from .*missing failed/);
    expect((await serverInfo(engine.url)).memory_released).toEqual([]);
    await a.releaseMemory(['kv_cache']);
    const req = { rid: 'c3', inputIds: [5, 17], sampling: { temperature: 1, topP: 1, seed: 1, maxNewTokens: 2 } };
    await expect(a.generate(req)).rejects.toThrowError(EngineUnavailableError);
    await a.resumeMemory(['kv_cache']);
    expect((await a.generate({ ...req, rid: 'c4' })).tokenIds.length).toBeGreaterThan(0);
  });
});
