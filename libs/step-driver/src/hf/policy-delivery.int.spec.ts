import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perturbedModelCopy } from '@rstar/testing';
import { parseRunConfig, type RunConfig } from '@rstar/contracts';
import { probeTokens, receiveDistributedWeights, SglangAdapter, WeightProbeError, WeightTransferUnsupportedError } from '@rstar/engines';
import { buildTrainingBatch } from '@rstar/grpo';
import { ensureTinyModel, startReferenceEngine, startTrainerWorker, TrainerWorkerClient, workersPythonForTests, type PythonProcess } from '@rstar/workers';
import { WorkerTrainer, workerLoss, workerOptimizer } from '../worker/worker.trainer';
import { HfPolicyDelivery } from './policy-delivery';
import { DEFAULT_WEIGHT_SYNC_PORT } from './group-port';

const python = workersPythonForTests();
const CACHE = resolve(__dirname, '../../../../.rstar/models');

/** Holds `port` open (another local run's group store) until `close`; a port some other process holds already serves as well. */
async function occupy(port: number): Promise<{ close: () => Promise<void> }> {
  const s = createServer();
  const held = await new Promise<boolean>((res) => {
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => res(true));
  });
  return { close: () => (held ? new Promise<void>((r) => s.close(() => r())) : Promise.resolve()) };
}

/**
 * The two halves of a run's distributed sync (docs/design/protocol.md §9) on real processes: the trainer
 * worker trains one step, {@link HfPolicyDelivery} (the optimization side) has it broadcast the buckets
 * `PolicyUpdated.sync` names while `receiveDistributedWeights` (policy-serving's pool) has the reference
 * engine receive them; the probe then agrees; weights loaded behind the run's back fail `verify`.
 */
describe.skipIf(!python)('HfPolicyDelivery: the trainer broadcasts, the engine receives concurrently, the probe checks (gloo, real processes)', () => {
  let tmp: string;
  let model: string;
  let other: string;
  let trainer: PythonProcess;
  let engine: PythonProcess;
  let config: RunConfig;

  beforeAll(async () => {
    model = await ensureTinyModel(CACHE);
    tmp = mkdtempSync(join(tmpdir(), 'rstar-delivery-'));
    other = join(tmp, 'other');
    perturbedModelCopy(python!, model, other);
    // The engine starts on other weights: only the sync makes it serve the trainer's.
    [trainer, engine] = await Promise.all([
      startTrainerWorker({ model, stateDir: join(tmp, 'state'), checkpointRoot: join(tmp, 'ckpt'), threads: 1 }),
      startReferenceEngine({ model: other, kvCapacityTokens: 2048, threads: 1, weightVersion: '0' }),
    ]);
    config = parseRunConfig({
      name: 'delivery', stages: [{ name: 'rl', steps: 1, promptsPerStep: 1, groupSize: 2, maxResponseTokens: 16, lr: 1e-3 }],
      policy: { kind: 'hf', path: model }, engines: [{ kind: 'sglang', url: engine.url }],
      trainer: { kind: 'worker', weightSync: 'distributed', weightSyncDtype: 'float32', weightSyncBucketMB: 0.25, warmupSteps: 0 },
    });
  }, 600_000);

  afterAll(async () => {
    await Promise.all([trainer?.stop(), engine?.stop()]);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('forms the group at start, delivers version 1 over it (probe < 1e-4, recorded per engine), and fails verify after a reload behind the run\'s back', async () => {
    const runId = 'run-delivery';
    const adapter = new SglangAdapter('sglang-0', engine.url);
    const vocab = (JSON.parse(readFileSync(join(model, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size;
    const delivery = new HfPolicyDelivery({ runId, config, trainerUrl: trainer.url, engines: [adapter], probeTokenIds: probeTokens(vocab), waitMs: 120_000, pollMs: 50 });
    // No trainer.weightSyncPort and a local trainer: the group's store takes a free port, not the default one
    // another local run may hold (two `rstar train --preset hf-tiny` at once failed with EADDRINUSE on 29650).
    expect(config.trainer.weightSyncPort).toBeUndefined();
    const held = await occupy(DEFAULT_WEIGHT_SYNC_PORT);
    try {
      await delivery.start();
    } finally {
      await held.close();
    }

    // One GRPO step on two sequences with rewards 1 and 0 (old logprobs: the trainer's own, so ratio 1).
    const ids = probeTokens(vocab, 12);
    const seqs = [ids, [...ids].reverse()];
    const rollouts = await Promise.all(seqs.map(async (s, i) => {
      const lps = await delivery.trainer.probe(s);
      return { rolloutId: `r${i}`, reward: 1 - i, promptTokenIds: s.slice(0, 4), responseTokenIds: s.slice(4), logprobs: lps.slice(3), lossMask: s.slice(4).map(() => 1) };
    }));
    const worker = new WorkerTrainer({
      client: new TrainerWorkerClient(trainer.url), workerRunId: runId, batchDir: join(tmp, 'batches'), mode: 'grpo', initialVersion: 0, initFrom: model,
      loss: (s) => workerLoss(config, s), optimizer: (s) => workerOptimizer(config, s), stepTimeoutMs: 600_000,
    });
    await worker.trainStep(buildTrainingBatch([{ groupId: 'g0', rollouts }]), { runId, step: 0 });
    expect(worker.version).toBe(1);
    const ckpt = await worker.save(join(tmp, 'step-0'));

    const update = { version: 1, checkpointUri: ckpt.uri, checkpointHash: ckpt.hash };
    const sync = await delivery.describe(update, 0);
    expect(sync).toMatchObject({ kind: 'distributed', step: 0, groupName: `rstar-weights-${runId}`, dtype: 'float32' });
    expect(sync!.buckets.length).toBeGreaterThan(1);
    // The engines' half (policy-serving) and the trainer's half (optimization) run at the same time.
    const [, probes] = await Promise.all([
      receiveDistributedWeights([adapter], sync!, { version: 1, checkpointHash: null }),
      delivery.deliver(update, sync),
    ]);
    expect(probes).toHaveLength(1);
    expect(probes[0]).toMatchObject({ engineId: 'sglang-0', sync: 'distributed', version: 1, passed: true, tokens: 31 });
    expect(probes[0].maxAbsDiff).toBeLessThan(1e-4);
    expect(probes[0].syncSeconds).toBeGreaterThan(0);
    expect((await adapter.loadedWeights()).weightVersion).toBe('1');
    await delivery.verify(1);

    // Someone reloads the engine from another checkpoint under the same version: the next verify names it.
    await adapter.updateWeights(other, { version: 1 });
    const err = await delivery.verify(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeightProbeError);
    expect((err as WeightProbeError).message).toMatch(/^engine sglang-0: after the distributed sync of policy version 1 its logprobs of the probe differ from the trainer's by up to \S+ \(tolerance 0\.001;/);
    expect((err as WeightProbeError).message).toMatch(/worst at probe position \d+, token \d+: trainer -?\d+\.\d+, engine -?\d+\.\d+/);
  }, 600_000);

  it('refuses at start an engine that does not serve the weight-transfer routes, naming the route and the fix', async () => {
    // The trainer worker answers HTTP but serves no /init_weights_update_group: a server without the routes.
    const notAnEngine = new SglangAdapter('sglang-x', trainer.url);
    const delivery = new HfPolicyDelivery({ runId: 'r', config, trainerUrl: trainer.url, engines: [notAnEngine], probeTokenIds: [3, 4], waitMs: 1000 });
    const err = await delivery.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeightTransferUnsupportedError);
    expect((err as Error).message).toContain('engine sglang-x does not serve /init_weights_update_group (HTTP 404)');
    expect((err as Error).message).toContain('or set trainer.weightSync: disk');
  }, 120_000);
});
