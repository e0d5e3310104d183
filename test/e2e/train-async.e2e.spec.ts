import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ids, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { verifyRun, type RerunComparison } from '@rstar/replay';
import { readRunEvents } from '@rstar/step-driver';
import { submitRemoteRun } from '@rstar/training';
import { until } from '@rstar/testing';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';
import { REPO_ROOT, createPrivateDatabase, startPrivateNats, type PrivateDatabase, type PrivateNats, type ServiceProcess } from '../support/service-process';
import { expectRunExactlyOnce } from '../support/run-exactly-once';
import { shortRunConfig, startPipeline, stopPipeline, type PipelineService, type RunShape } from '../support/distributed-pipeline';
import { archiveCaughtUp } from '../support/archive-caught-up';
import { trainedStaleness } from '../support/trained-staleness';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const SHAPE: RunShape = { steps: 3, prompts: 2, group: 2, oversample: 2 };

/** `rstar replay ARGS` in a child process (the CLI as a user runs it), with no archive or bus from the environment. */
function replayCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'libs/cli/src/main.ts'), 'replay', ...args], { cwd: REPO_ROOT, maxBuffer: 64 << 20, env: { ...process.env, RSTAR_DATABASE_URL: '', RSTAR_NATS_URL: '' } }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

// Bounded-staleness runs (async.maxStaleness η = 1 and 2) over JetStream + Postgres with every service a
// real child process (its own main.ts), on a private nats-server and database: steps s+1..s+η are requested
// while step s trains, no rollout is trained more than η versions after the version that sampled it
// (checked over the archived log), `replay verify` re-derives every decision, `rstar replay rerun --step 1`
// re-runs a step requested ahead of the trainer on the weights each rollout was sampled on; and, in one run,
// a SIGKILL of optimization and then of policy-serving mid-window: each restarted service recovers from the
// log and the bus, the run completes, no rollout is trained twice or lost and the bound holds.
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

  /** Events the archive holds that never were on the stream: those of standalone reruns (their bus is in process). */
  let rerunEvents = 0;

  /** The run's archived events once RunCompleted is archived and the archive holds every message of the stream. */
  async function finished(runId: string): Promise<RstarEvent[]> {
    await until(async () => (await readRunEvents(store!, runId, ['RunCompleted', 'RunFailed'])).length > 0 || undefined, `run ${runId} finished`, { timeoutMs: 240_000, everyMs: 250 });
    await archiveCaughtUp(store!, async () => (await bus!.jsm.streams.info(bus!.stream)).state.messages + rerunEvents);
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
    const { trained: staleness, entered } = trainedStaleness(events);
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
      if (eta === 1) await expectAsyncStepReruns(runId, events);
    }, 420_000);
  }

  /**
   * `rstar replay rerun RUN --step 1 --standalone` on the archive: step 1 was requested under version 0
   * while step 0 trained, so its rollouts may have been sampled by version 0 or 1; the rerun serves each
   * rollout the version it was sampled on and reproduces the step with no deterministic difference.
   */
  async function expectAsyncStepReruns(runId: string, events: RstarEvent[]): Promise<void> {
    // Rollout ids end in `:<promptIdx>:<sampleIdx>` in both runs (ids.rollout).
    const slot = (rolloutId: string) => rolloutId.split(':').slice(-2).join(':');
    const sampledBy = new Map(events.flatMap((e) => (e.type === 'RolloutCompleted' && e.data.step === 1 ? [[slot(e.data.rolloutId), e.data.policyVersion] as const] : [])));
    expect(sampledBy.size).toBe(SHAPE.prompts * SHAPE.group * SHAPE.oversample);
    const rerunId = ids.newRun();
    const r = await replayCli(['rerun', runId, '--database', db!.url, '--step', '1', '--standalone', '--run-id', rerunId, '--json']);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    process.stdout.write(`[train-async] ${r.stderr.split('\n').filter((l) => l.includes(`rerun ${rerunId}`)).join('\n')}\n`);
    rerunEvents += (await readRunEvents(store!, rerunId)).length;
    const c = JSON.parse(r.stdout) as RerunComparison & { runId: string };
    expect(c).toMatchObject({ runId: rerunId, originalRunId: runId, step: 1, ok: true, deterministicDifferences: 0 });
    expect(c.rollouts).toHaveLength(sampledBy.size);
    const rerun = (await readRunEvents(store!, rerunId, ['RolloutCompleted'])) as RstarEvent<'RolloutCompleted'>[];
    expect(rerun).toHaveLength(sampledBy.size);
    for (const e of rerun) expect(e.data.policyVersion, `rerun of prompt:sample ${slot(e.data.rolloutId)}`).toBe(sampledBy.get(slot(e.data.rolloutId)));
  }

  it('η = 1: optimization and then policy-serving SIGKILLed mid-window and restarted; the run completes, no rollout trained twice or lost, the bound holds', async () => {
    const runId = ids.newRun();
    const optimization = svcs!.get('optimization')!;
    const serving = svcs!.get('policy-serving')!;
    const startsBefore = optimization.starts;
    const servingStartsBefore = serving.starts;
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
    // Mid-window again, for policy-serving: step 2 requested (ahead of the trainer, while step 1 trains) and
    // not completed; its rollouts in flight or queued on the killed instance must be redelivered.
    await until(async () => (await readRunEvents(store!, runId, ['StepStarted', 'RunCompleted', 'RunFailed'])).some((e) => e.type !== 'StepStarted' || e.data.step === 2) || undefined, `StepStarted 2 of run ${runId}`, { timeoutMs: 180_000, everyMs: 100 });
    const atServingKill = await readRunEvents(store!, runId);
    expect(atServingKill.filter((e) => e.type === 'RunCompleted' || e.type === 'RunFailed')).toHaveLength(0);
    expect(atServingKill.some((e) => e.type === 'StepCompleted' && e.data.step === 2)).toBe(false);
    await serving.kill();
    await serving.start();
    await submitted;
    const events = await finished(runId);
    expectBoundedAndVerified(events, 1);
    const report = await verifyRun(events);
    expect(report.differences.filter((d) => d.deterministic).map((d) => d.message)).toEqual([]);
    expect(optimization.starts).toBe(startsBefore + 1);
    expect(serving.starts).toBe(servingStartsBefore + 1);
  }, 480_000);
});
