import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';
import { parseRunConfig, type RstarEvent } from '@rstar/contracts';
import { connectRuntime, JetStreamBus, type Runtime } from '@rstar/messaging';
import { EnginePool, PolicyServingHandler, createEngines, startBuiltinEngine, type BuiltinEngine } from '@rstar/policy-serving';
import { ResamplingHandler } from '@rstar/resampling';
import { RewardGradingHandler } from '@rstar/reward-grading';
import { ToolExecutionHandler } from '@rstar/tool-execution';
import { SandboxPool } from '@rstar/sandbox';
import { rebuildStepBatch } from '../../libs/cli/src/train/batch.rebuild';
import { readRunEvents, resamplingEventSource } from '../../libs/cli/src/train/event-store.sources';
import { submitRemoteRun } from '../../libs/cli/src/train/remote.submit';
import { RunStartConsumer } from '../../libs/cli/src/train/run-start.consumer';

const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
// A small SFT checkpoint, trained once by the test support and cached under .rstar/cache (never committed).
let FIXTURE_CKPT = '';

// Distributed mode in one process: JetStream bus + Postgres archive, every service's handler on the bus, and
// `rstar train --remote`'s submission (RunStarted) picked up by the optimization service's RunStartConsumer.
describe('rstar train --remote: a run submitted to the services over JetStream', () => {
  const tag = `train_dist_${process.pid}_${Date.now()}`;
  let runtime: Runtime;
  let sandbox: SandboxPool;
  let engine: BuiltinEngine;
  let out: string;
  let runId: string;
  let events: RstarEvent[];
  const stops: Array<() => Promise<void>> = [];
  const lines: string[] = [];

  beforeAll(async () => {
    FIXTURE_CKPT = await ensureSftCheckpoint();
    out = mkdtempSync(join(tmpdir(), 'rstar-train-dist-'));
    runtime = await connectRuntime({ natsUrl: NATS_URL, databaseUrl: PG_URL, schema: tag, stream: tag.toUpperCase(), subjectPrefix: tag, archive: true });
    const { bus, store } = runtime;
    sandbox = new SandboxPool({ workers: 1 });
    await sandbox.start();
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: FIXTURE_CKPT, kvCapacityTokens: 160 * 64 });
    const model = engine.model;
    const adapters = createEngines([`builtin=${engine.url}`]);
    const handlers = [
      new ToolExecutionHandler(bus, sandbox),
      new RewardGradingHandler(bus),
      new ResamplingHandler(bus, { store: resamplingEventSource(store, 'none') }),
      new PolicyServingHandler(bus, { pool: await EnginePool.create(adapters), tokenizer: model.tokenizer, compactPrompt: true }),
      new RunStartConsumer(bus, store, { engines: adapters, checkpointRoot: out }),
    ];
    for (const h of handlers) {
      await h.start();
      stops.unshift(() => h.stop());
    }
    const config = parseRunConfig({
      name: 'e2e-remote', seed: 13, policy: { model: { layers: 2, dModel: 64, heads: 4, context: 160 }, init: 'checkpoint', checkpoint: FIXTURE_CKPT },
      data: { source: 'tasks', heldOutSize: 4, trainSize: 256 },
      stages: [{ name: 'rl-1', steps: 2, promptsPerStep: 8, groupSize: 2, oversample: 2, maxResponseTokens: 112, maxTurns: 3, lr: 0.0005 }],
      trainer: { warmupSteps: 1 },
    });
    runId = await submitRemoteRun(config, { bus, onLine: (l) => lines.push(l) });
    await runtime.flush();
    events = await readRunEvents(store, runId);
  }, SFT_CHECKPOINT_TIMEOUT_MS + 300_000);

  afterAll(async () => {
    for (const stop of stops) await stop().catch(() => undefined);
    await engine?.close();
    await sandbox?.close();
    if (runtime) {
      await (runtime.bus as JetStreamBus).jsm.streams.delete(tag.toUpperCase()).catch(() => undefined);
      await runtime.close();
    }
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`);
    await c.end();
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('runs every step through the services, reports each step to the submitter, and archives rebuildable batches', () => {
    expect(lines.filter((l) => l.startsWith('step ')).length).toBe(2);
    expect(events.filter((e) => e.type === 'RunStarted').length).toBe(1);
    expect(events.filter((e) => e.type === 'RunCompleted').length).toBe(1);
    expect(events.filter((e) => e.type === 'StepCompleted').length).toBe(2);
    expect(events.filter((e) => e.type === 'RolloutCompleted').length).toBe(2 * 8 * 4);
    expect(events.filter((e) => e.type === 'RewardAssigned').length).toBe(2 * 8 * 4);
    const optimized = events.filter((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized');
    expect(optimized.length).toBeGreaterThan(0);
    for (const o of optimized) expect(rebuildStepBatch(events, o.data.step).hash).toBe(o.data.batchHash);
    // The engine serves the last update's weights.
    expect(engine.model.hash).toBe(optimized.at(-1)!.data.checkpointHash);
  });
});
