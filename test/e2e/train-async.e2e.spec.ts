import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ids, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { verifyRun } from '@rstar/replay';
import { readRunEvents } from '@rstar/step-driver';
import { submitRemoteRun } from '@rstar/training';
import { until } from '@rstar/testing';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';
import { createPrivateDatabase, startPrivateNats, type PrivateDatabase, type PrivateNats, type ServiceProcess } from '../support/service-process';
import { expectRunExactlyOnce } from '../support/run-exactly-once';
import { shortRunConfig, startPipeline, stopPipeline, type PipelineService, type RunShape } from '../support/distributed-pipeline';
import { archiveCaughtUp } from '../support/archive-caught-up';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const SHAPE: RunShape = { steps: 3, prompts: 2, group: 2, oversample: 2 };

/**
 * The staleness of every rollout that entered a batch, over a run's archived log: the trainer's version
 * before the step's update (StepOptimized.newPolicyVersion - 1) minus the version that sampled the
 * rollout (RolloutCompleted.policyVersion), for each kept rollout without a RolloutDiscarded. Also
 * returns how often each rollout entered a batch.
 */
function trainedStaleness(events: readonly RstarEvent[]): { staleness: Array<{ rolloutId: string; step: number; staleness: number }>; entered: Map<string, number> } {
  const sampledBy = new Map(events.flatMap((e) => (e.type === 'RolloutCompleted' ? [[e.data.rolloutId, e.data.policyVersion] as const] : [])));
  const discarded = new Set(events.flatMap((e) => (e.type === 'RolloutDiscarded' ? [e.data.rolloutId] : [])));
  const trainAt = new Map(events.flatMap((e) => (e.type === 'StepOptimized' ? [[e.data.step, e.data.newPolicyVersion - 1] as const] : [])));
  const resampled = events.filter((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled');
  const staleness: Array<{ rolloutId: string; step: number; staleness: number }> = [];
  const entered = new Map<string, number>();
  for (const g of resampled) {
    const v = trainAt.get(g.data.step);
    if (v === undefined) continue;
    for (const id of g.data.kept.filter((k) => !discarded.has(k))) {
      staleness.push({ rolloutId: id, step: g.data.step, staleness: v - sampledBy.get(id)! });
      entered.set(id, (entered.get(id) ?? 0) + 1);
    }
  }
  return { staleness, entered };
}

// Bounded-staleness runs (async.maxStaleness η = 1 and 2) over JetStream + Postgres with every service a
// real child process (its own main.ts), on a private nats-server and database: steps s+1..s+η are requested
// while step s trains, no rollout is trained more than η versions after the version that sampled it
// (checked over the archived log), `replay verify` re-derives every decision; and a SIGKILL of optimization
// mid-window: the restarted service restores the window from the log, the run completes, no rollout is
// trained twice or lost and the bound holds.
describe('async GRPO (bounded staleness) over JetStream + Postgres', () => {
  const dbName = `async_${process.pid}_${Date.now()}`;
  let nats: PrivateNats | undefined;
  let db: PrivateDatabase | undefined;
  let engine: BuiltinEngine | undefined;
  let store: EventStore | undefined;
  let bus: JetStreamBus | undefined;
  let svcs: Map<PipelineService, ServiceProcess> | undefined;
  let ckptDir = '';
  let sft = '';

  beforeAll(async () => {
    sft = await ensureSftCheckpoint();
    ckptDir = mkdtempSync(join(tmpdir(), 'rstar-async-'));
    nats = await startPrivateNats();
    db = await createPrivateDatabase(PG_URL, dbName);
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: sft, kvCapacityTokens: 160 * 64 });
    svcs = await startPipeline({ natsUrl: nats.url, databaseUrl: db.url, engineUrl: engine.url, checkpointDir: ckptDir });
    store = await EventStore.connect({ connectionString: db.url });
    bus = await JetStreamBus.connect({ servers: nats.url, name: 'async-observer' });
  }, SFT_CHECKPOINT_TIMEOUT_MS + 240_000);

  afterAll(async () => {
    await stopPipeline(svcs);
    await store?.close().catch(() => undefined);
    await bus?.close().catch(() => undefined);
    await engine?.close().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
    await db?.drop().catch(() => undefined);
    if (ckptDir) rmSync(ckptDir, { recursive: true, force: true });
  }, 60_000);

  /** The run's archived events once RunCompleted is archived and the archive holds every message of the stream. */
  async function finished(runId: string): Promise<RstarEvent[]> {
    await until(async () => (await readRunEvents(store!, runId, ['RunCompleted', 'RunFailed'])).length > 0 || undefined, `run ${runId} finished`, { timeoutMs: 240_000, everyMs: 250 });
    await archiveCaughtUp(store!, bus!);
    return readRunEvents(store!, runId);
  }

  function expectBoundedAndVerified(events: RstarEvent[], eta: number) {
    expectRunExactlyOnce(events, SHAPE);
    const started = new Map(events.filter((e): e is RstarEvent<'StepStarted'> => e.type === 'StepStarted').map((e) => [e.data.step, e.data.policyVersion]));
    // Steps 1..η were requested before step 0's update, at the starting version.
    for (let s = 1; s <= Math.min(eta, SHAPE.steps - 1); s++) expect(started.get(s), `StepStarted ${s}.policyVersion`).toBe(0);
    // A step whose groups were all dropped (all-equal rewards) trains nothing: at most one update per step.
    const optimized = events.filter((e) => e.type === 'StepOptimized').map((e) => (e.data as { step: number }).step);
    expect(new Set(optimized).size).toBe(optimized.length);
    expect(optimized.length).toBeGreaterThan(0);
    const { staleness, entered } = trainedStaleness(events);
    expect(staleness.length).toBeGreaterThan(0);
    for (const s of staleness) expect(s.staleness, `staleness of ${s.rolloutId} at step ${s.step}`).toBeLessThanOrEqual(eta);
    expect([...entered.values()].every((n) => n === 1), 'each rollout entered at most one batch').toBe(true);
    const completed = events.filter((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted');
    for (const c of completed) expect(c.data.metrics.maxStaleness).toBe(eta);
    return staleness;
  }

  for (const eta of [1, 2]) {
    it(`η = ${eta}: the window overlaps steps, no rollout is trained more than ${eta} versions late, replay verify re-derives every decision`, async () => {
      const runId = ids.newRun();
      await submitRemoteRun(shortRunConfig(`async-${eta}`, 500 + eta, sft, SHAPE, { async: { maxStaleness: eta } }), { bus, runId });
      const events = await finished(runId);
      expectBoundedAndVerified(events, eta);
      const report = await verifyRun(events);
      expect(report.differences.filter((d) => d.deterministic).map((d) => d.message)).toEqual([]);
      expect(report.staleness.length).toBeGreaterThan(0);
      expect(report.staleness.flatMap((s) => s.discarded)).toHaveLength(events.filter((e) => e.type === 'RolloutDiscarded').length);
    }, 300_000);
  }

  it('η = 1: optimization SIGKILLed mid-window and restarted; the run completes, no rollout trained twice or lost, the bound holds', async () => {
    const runId = ids.newRun();
    const optimization = svcs!.get('optimization')!;
    const startsBefore = optimization.starts;
    const submitted = submitRemoteRun(shortRunConfig('async-chaos', 611, sft, SHAPE, { async: { maxStaleness: 1 } }), { bus, runId });
    submitted.catch(() => undefined);
    // Mid-window: step 0 trained and its update published, step 1's rollouts requested under version 0.
    await until(async () => (await readRunEvents(store!, runId, ['PolicyUpdated', 'RunCompleted', 'RunFailed'])).length > 0 || undefined, `the first PolicyUpdated of run ${runId}`, { timeoutMs: 180_000, everyMs: 100 });
    const atKill = await readRunEvents(store!, runId);
    expect(atKill.filter((e) => e.type === 'RunCompleted')).toHaveLength(0);
    expect(atKill.some((e) => e.type === 'StepStarted' && e.data.step === 1)).toBe(true);
    expect(atKill.filter((e) => e.type === 'StepCompleted').length).toBeLessThan(SHAPE.steps);
    await optimization.kill();
    await optimization.start();
    await submitted;
    const events = await finished(runId);
    expectBoundedAndVerified(events, 1);
    const report = await verifyRun(events);
    expect(report.differences.filter((d) => d.deterministic).map((d) => d.message)).toEqual([]);
    expect(optimization.starts).toBe(startsBefore + 1);
  }, 360_000);
});
