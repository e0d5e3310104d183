import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ids, makeEvent, streams } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { distributedRolloutExtras, readRunEvents } from '@rstar/step-driver';
import { submitRemoteRun } from '@rstar/training';
import { until } from '@rstar/testing';
import { PolicyModel } from '@rstar/policy';
import { startPrivateNats, type PrivateNats, type ServiceProcess } from '../support/service-process';
import { PrivatePostgres } from '../support/private-postgres';
import { shortRunConfig, startPipeline, stopPipeline, type PipelineService } from '../support/distributed-pipeline';
import { archiveCaughtUp } from '../support/archive-caught-up';

/** policy-serving's `/v1/engines`: the pool rollouts run on now. */
interface EnginesView {
  policy: string;
  engines: Array<{ id: string; capacity: number; up: boolean }>;
}

// `rstar train --remote`: the run config is the one source of truth. The services are started with
// RSTAR_ENGINES naming engine A and RSTAR_SCHEDULER round-robin; a run whose config names its scheduler and
// KV budget is served with exactly those, and rollouts whose run names engine B by URL go to B, not A.
describe('remote runs use the run config over the services\' environment', () => {
  let pg: PrivatePostgres | undefined;
  let nats: PrivateNats | undefined;
  let engineA: BuiltinEngine | undefined;
  let engineB: BuiltinEngine | undefined;
  let store: EventStore | undefined;
  let bus: JetStreamBus | undefined;
  let svcs: Map<PipelineService, ServiceProcess> | undefined;
  let ckptDir = '';
  let sftCheckpoint = '';

  beforeAll(async () => {
    ckptDir = mkdtempSync(join(tmpdir(), 'rstar-config-engines-'));
    // An untrained tiny policy: this test is about which engines and scheduler serve a run, not about learning.
    const model = await PolicyModel.create({ layers: 2, dModel: 64, heads: 4, context: 160 }, 410);
    sftCheckpoint = model.save(join(ckptDir, 'start')).dir;
    model.dispose();
    pg = await PrivatePostgres.start();
    nats = await startPrivateNats();
    engineA = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: sftCheckpoint, kvCapacityTokens: 160 * 64 });
    engineB = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: sftCheckpoint, kvCapacityTokens: 160 * 48 });
    svcs = await startPipeline({ natsUrl: nats.url, databaseUrl: pg.url(), engineUrl: engineA.url, checkpointDir: ckptDir, env: { RSTAR_SCHEDULER: 'round-robin' } });
    store = await EventStore.connect({ connectionString: pg.url() });
    bus = await JetStreamBus.connect({ servers: nats.url, name: 'config-engines-observer' });
  }, 300_000);

  afterAll(async () => {
    await stopPipeline(svcs);
    await store?.close().catch(() => undefined);
    await bus?.close().catch(() => undefined);
    await engineA?.close().catch(() => undefined);
    await engineB?.close().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
    await pg?.destroy();
    if (ckptDir) rmSync(ckptDir, { recursive: true, force: true });
  }, 60_000);

  const enginesView = async (): Promise<EnginesView> => {
    const r = await fetch(`http://127.0.0.1:${svcs!.get('policy-serving')!.opts.port}/v1/engines`);
    expect(r.status).toBe(200);
    return (await r.json()) as EnginesView;
  };

  it("a run's scheduler and engines[].kvCapacityTokens, not RSTAR_SCHEDULER and the engine's own capacity", async () => {
    expect(await enginesView()).toMatchObject({ policy: 'round-robin', engines: [{ capacity: 160 * 64 }] });
    const config = shortRunConfig('config-engines', 410, sftCheckpoint, { steps: 1, prompts: 2, group: 2, oversample: 2 }, {
      scheduler: 'least-requests', engines: [{ kind: 'builtin', kvCapacityTokens: 7777 }],
    });
    const runId = ids.newRun();
    await submitRemoteRun(config, { bus, runId });
    // The run ended on the bus; the archiver is its own consumer and can trail it (CI once read 5 of 8 here).
    await archiveCaughtUp(store!, bus!);
    const completed = await readRunEvents(store!, runId, ['RolloutCompleted']);
    expect(completed.length).toBe(8);
    const view = await enginesView();
    expect(view.policy).toBe('least-requests');
    expect(view.engines.map((e) => e.capacity)).toEqual([7777]);
  }, 600_000);

  it("rollouts whose run config names an engine's URL go to that engine, not to RSTAR_ENGINES'", async () => {
    // What a GPU config's engines (sglang, with URLs) put on each RolloutRequested, here naming engine B. The
    // built-in engine reports its weights' hash as its version, so it is named as what it is (builtin): a
    // built-in policy's own config cannot name a URL (standalone runs start their own engine; --validate refuses it).
    const config = shortRunConfig('config-engine-url', 411, sftCheckpoint, { steps: 1, prompts: 1, group: 1, oversample: 1 });
    const extras = distributedRolloutExtras({ ...config, scheduler: 'round-robin', engines: [{ kind: 'builtin', url: engineB!.url, kvCapacityTokens: null }] });
    const runId = ids.newRun();
    const rolloutId = ids.rollout(runId, 0, 0, 0);
    const [batchesA, batchesB] = [engineA!.scheduler.stats().batches, engineB!.scheduler.stats().batches];
    await bus!.publish(makeEvent('RolloutRequested', {
      runId, streamId: streams.rollout(rolloutId), key: rolloutId, producer: 'optimization',
      data: {
        rolloutId, groupId: ids.group(runId, 0, 0), step: 0, promptIdx: 0, sampleIdx: 0, promptId: 'p0', problem: 'What is 2 + 3?', gold: '5',
        samplingParams: { temperature: 1, topP: 1, seed: 7 }, budget: { maxTokens: 64, maxTurns: 2 }, policyVersion: 0,
        prompt: { compact: true }, ...extras,
      },
    }));
    const [ended] = await until(async () => {
      const evs = await readRunEvents(store!, runId, ['RolloutCompleted', 'RunFailed']);
      return evs.length > 0 ? evs : undefined;
    }, `rollout ${rolloutId} completed`, { timeoutMs: 120_000, everyMs: 200 });
    expect(ended.type, ended.type === 'RunFailed' ? JSON.stringify(ended.data) : '').toBe('RolloutCompleted');
    expect(engineB!.scheduler.stats().batches).toBeGreaterThan(batchesB);
    expect(engineA!.scheduler.stats().batches).toBe(batchesA);
    const view = await enginesView();
    expect(view.policy).toBe('round-robin');
    expect(view.engines.map((e) => e.capacity)).toEqual([160 * 48]);
  }, 300_000);
});
