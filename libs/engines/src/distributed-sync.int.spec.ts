import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freeLocalPort, perturbedModelCopy } from '@rstar/testing';
import { ensureTinyModel, startReferenceEngine, startTrainerWorker, workersPythonForTests, type PythonProcess } from '@rstar/workers';
import { startBuiltinEngine, type BuiltinEngine } from './builtin-engine';
import { DistributedWeightSync, TrainerWeightSource } from './distributed-sync';
import { WeightProbeError, WeightTransferUnsupportedError, checkWeightTransferRoutes, probeTokens, runWeightProbe } from './probe.check';
import { SglangAdapter } from './sglang.adapter';
import { VllmAdapter } from './vllm.adapter';

const python = workersPythonForTests();
const CACHE = resolve(__dirname, '../../../.rstar/models');

describe.skipIf(!python)('distributed weight sync (gloo) from the trainer worker into the reference engine, checked by the probe', () => {
  let tmp: string;
  let model: string;
  let other: string;
  let trainer: PythonProcess;
  let engine: PythonProcess;
  let builtin: BuiltinEngine;

  beforeAll(async () => {
    model = await ensureTinyModel(CACHE);
    tmp = mkdtempSync(join(tmpdir(), 'rstar-wsync-'));
    other = join(tmp, 'other');
    perturbedModelCopy(python!, model, other);
    // The engine starts on other weights than the trainer's: only the sync makes them agree.
    [trainer, engine, builtin] = await Promise.all([
      startTrainerWorker({ model, stateDir: join(tmp, 'state'), threads: 1 }),
      startReferenceEngine({ model: other, kvCapacityTokens: 2048, threads: 1 }),
      startBuiltinEngine({ port: 0, kvCapacityTokens: 1000, seed: 1 }),
    ]);
  }, 600_000);
  afterAll(async () => {
    await Promise.all([trainer?.stop(), engine?.stop(), builtin?.close()]);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('before the sync the probe fails naming the engine, version and token; after it the engine matches the trainer; a reload behind the run\'s back fails it again', async () => {
    const source = new TrainerWeightSource(trainer.url);
    const sglang = new SglangAdapter('ref-0', engine.url);
    const engines = [{ id: sglang.id, transfer: sglang.weightTransfer() }];
    const vocab = ((await (await fetch(`${trainer.url}/v1/info`)).json()) as { vocabSize: number }).vocabSize;
    const tokenIds = probeTokens(vocab, 32);
    const probe = () => runWeightProbe({ trainer: source, engines, version: 0, sync: 'distributed', tokenIds, tolerance: 1e-4 });

    const before = await probe().catch((e) => e);
    expect(before).toBeInstanceOf(WeightProbeError);
    expect(before.message).toMatch(/engine ref-0: .*policy version 0 .*token \d+: trainer -?\d+\.\d+, engine -?\d+\.\d+/);

    const sync = new DistributedWeightSync({
      trainer: source, engines, bucketMB: 0.25, dtype: 'float32',
      group: { masterAddress: '127.0.0.1', masterPort: await freeLocalPort(), groupName: 'rstar-wsync-spec', backend: 'gloo' },
    });
    await checkWeightTransferRoutes({ id: sglang.id, kind: 'sglang', url: engine.url });
    const sent = await sync.sync({ policyVersion: 0 });
    expect(sent.buckets).toBeGreaterThan(2);
    expect(sent.parameters).toBeGreaterThan(100_000);
    const [after] = await probe();
    expect(after.passed).toBe(true);
    expect(after.maxAbsDiff).toBeLessThan(1e-4);
    expect(await sglang.loadedWeights()).toEqual({ weightVersion: '0', manifestHash: null });

    // Reloaded from another checkpoint by someone else: the next probe names the engine and the difference.
    await sglang.updateWeights(other);
    const err = await probe().catch((e) => e);
    expect(err).toBeInstanceOf(WeightProbeError);
    expect((err as WeightProbeError).result.maxAbsDiff).toBeGreaterThan(1e-2);
    expect(err.message).toContain('engine ref-0');

    // The group stays: one more sync (one bucket) restores it.
    expect((await sync.sync({ policyVersion: 0 }, { bucketMB: 512 })).buckets).toBe(1);
    expect((await probe())[0].maxAbsDiff).toBeLessThan(1e-4);
  }, 600_000);

  it('vLLM kind: the reference engine serves the weight-transfer routes and prompt logprobs; a server without them is refused at start naming the flag', async () => {
    await checkWeightTransferRoutes({ id: 'vllm-ref', kind: 'vllm', url: engine.url });
    const v = new VllmAdapter('vllm-ref', engine.url);
    const ids = probeTokens(500, 8);
    const lps = await v.weightTransfer().promptLogprobs(ids);
    const sg = await new SglangAdapter('sg', engine.url).weightTransfer().promptLogprobs(ids);
    expect(lps).toHaveLength(7);
    lps.forEach((x, i) => expect(x).toBeCloseTo(sg[i], 6));

    const err = await checkWeightTransferRoutes({ id: 'vllm-0', kind: 'vllm', url: builtin.url }).catch((e) => e);
    expect(err).toBeInstanceOf(WeightTransferUnsupportedError);
    expect(err.message).toContain('engine vllm-0');
    expect(err.message).toContain('VLLM_SERVER_DEV_MODE=1');
    expect(err.message).toContain('--weight-transfer-config');
    // A server without /reset_prefix_cache (vLLM without dev mode; here the trainer worker's HTTP server
    // answers 404 to it the same way): the flush is skipped, not a failure at the first update.
    await new VllmAdapter('vllm-1', trainer.url).flushCache();
    await new VllmAdapter('vllm-1', trainer.url).flushCache();
  }, 300_000);
});
