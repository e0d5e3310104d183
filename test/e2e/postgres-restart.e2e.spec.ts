import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ids, type EventType } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { readRunEvents } from '@rstar/step-driver';
import { submitRemoteRun } from '@rstar/training';
import { until } from '@rstar/testing';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';
import { startPrivateNats, type PrivateNats, type ServiceProcess } from '../support/service-process';
import { PrivatePostgres } from '../support/private-postgres';
import { expectRunExactlyOnce } from '../support/run-exactly-once';
import { shortRunConfig, startPipeline, stopPipeline, type PipelineService, type RunShape } from '../support/distributed-pipeline';
import { archiveCaughtUp } from '../support/archive-caught-up';

const SHAPE: RunShape = { steps: 2, prompts: 4, group: 2, oversample: 2 };

// Postgres goes away mid-run (a restart or a failover: `pg_ctl stop -m fast` ends every session) and
// comes back. On a Postgres of this test's own (its own data folder and port; the shared server on 5432
// is left alone): the archiver's appends fail and are retried with backoff from the stream while it runs,
// and then the archiver and the two services that rebuild state from the archive (resampling's open groups,
// optimization's run resume) die with it. The readers come back first, to an archive that misses events
// their consumers had acked: they must wait for the archiver to catch up before reading, or groups lose
// rewards and time out. The run completes with no group dropped; the archive holds every message of the
// stream exactly once.
describe('Postgres restart mid-run', () => {
  let pg: PrivatePostgres | undefined;
  let nats: PrivateNats | undefined;
  let engine: BuiltinEngine | undefined;
  let store: EventStore | undefined;
  let bus: JetStreamBus | undefined;
  let svcs: Map<PipelineService, ServiceProcess> | undefined;
  let ckptDir = '';
  let sftCheckpoint = '';

  beforeAll(async () => {
    sftCheckpoint = await ensureSftCheckpoint();
    ckptDir = mkdtempSync(join(tmpdir(), 'rstar-pg-restart-'));
    pg = await PrivatePostgres.start();
    nats = await startPrivateNats();
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: sftCheckpoint, kvCapacityTokens: 160 * 64 });
    svcs = await startPipeline({ natsUrl: nats.url, databaseUrl: pg.url(), engineUrl: engine.url, checkpointDir: ckptDir });
    store = await EventStore.connect({ connectionString: pg.url() });
    bus = await JetStreamBus.connect({ servers: nats.url, name: 'pg-restart-observer' });
  }, SFT_CHECKPOINT_TIMEOUT_MS + 240_000);

  afterAll(async () => {
    await stopPipeline(svcs);
    await store?.close().catch(() => undefined);
    await bus?.close().catch(() => undefined);
    await engine?.close().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
    await pg?.destroy();
    if (ckptDir) rmSync(ckptDir, { recursive: true, force: true });
  }, 60_000);

  const archivedOf = async (runId: string, types?: EventType[]) => readRunEvents(store!, runId, types).catch(() => []);
  const streamMessages = async () => (await bus!.jsm.streams.info(bus!.stream)).state.messages;

  it('the archiver, resampling and optimization ride out the outage and their own restarts; the run completes, archive = stream, no group lost', async () => {
    const runId = ids.newRun();
    // Groups wait at most 150 s for their rollouts: a reader that lost acked events would drop groups on timeout.
    const submitted = submitRemoteRun(shortRunConfig('pg-restart', 400, sftCheckpoint, SHAPE, { roc: { groupTimeoutS: 150 } }), { bus, runId });
    submitted.catch(() => undefined);
    await until(async () => (await archivedOf(runId, ['RolloutCompleted', 'RunCompleted', 'RunFailed'])).length > 0 || undefined, `the first RolloutCompleted of run ${runId}`, { timeoutMs: 150_000, everyMs: 100 });
    const atStop = await archivedOf(runId);
    expect(atStop.filter((e) => e.type === 'StepCompleted' || e.type === 'RunCompleted')).toHaveLength(0);
    const archivedAtStop = await store!.count();
    pg!.stopServer();

    // The run goes on over the bus while the archive is down: events pile up in the stream.
    const streamAtStop = await streamMessages();
    await until(async () => (await streamMessages()) >= streamAtStop + 20 || undefined, 'events published while Postgres is down', { timeoutMs: 120_000, everyMs: 200 });
    // The node that held Postgres took the archiver and both readers with it: all three are killed while
    // Postgres is down. Postgres comes back first, then the readers, whose first archive reads now find an
    // archive that misses what their consumers acked before they died (the archiver is not running yet).
    const [controlPlane, resampling, optimization] = (['control-plane', 'resampling', 'optimization'] as const).map((n) => svcs!.get(n)!);
    await Promise.all([controlPlane.kill(), resampling.kill(), optimization.kill()]);
    await pg!.startServer();
    const readers = Promise.all([resampling.start(), optimization.start()]);
    readers.catch(() => undefined);
    // Both readers connected to NATS and the (stale) archive before the archiver runs again.
    await until(async () => {
      const states = await Promise.all([resampling, optimization].map(async (svc) => {
        const r = await fetch(`http://127.0.0.1:${svc.opts.port}/health/ready`).catch(() => null);
        if (!r) return false;
        const j = (await r.json()) as { info?: Record<string, { status: string }>; error?: Record<string, { status: string }> };
        const all = { ...j.error, ...j.info };
        return all.nats?.status === 'up' && all.postgres?.status === 'up';
      }));
      return states.every(Boolean) || undefined;
    }, 'the restarted readers to reach NATS and Postgres', { timeoutMs: 120_000, everyMs: 250 });
    await controlPlane.start();
    await readers;

    await submitted;
    await until(async () => (await archivedOf(runId, ['RunCompleted'])).length > 0 || undefined, `run ${runId}'s RunCompleted archived`, { timeoutMs: 90_000, everyMs: 200 });
    const archived = await archiveCaughtUp(store!, streamMessages);
    expect(archived).toBeGreaterThan(archivedAtStop);
    expectRunExactlyOnce(await archivedOf(runId), SHAPE);
    expect([controlPlane.starts, resampling.starts, optimization.starts]).toEqual([2, 2, 2]);
  }, 600_000);
});
