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
import { createPrivateDatabase, type PrivateDatabase, type ServiceProcess } from '../support/service-process';
import { NatsCluster } from '../support/nats-cluster';
import { expectRunExactlyOnce } from '../support/run-exactly-once';
import { shortRunConfig, startPipeline, stopPipeline, type PipelineService, type RunShape } from '../support/distributed-pipeline';
import { archiveCaughtUp } from '../support/archive-caught-up';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const SHAPE: RunShape = { steps: 2, prompts: 4, group: 2, oversample: 2 };
const STREAM_MAX_BYTES = 2 * 1024 ** 3;

// A distributed run on a 3-node JetStream cluster (three nats-server processes, routes, the stream and its
// consumers at 3 replicas) loses one node mid-run — SIGKILL, no goodbye — and gets it back: the run
// completes, every message the stream stored is archived exactly once, and the restarted node catches up.
// Once for a node holding client connections that does not lead the stream, once for the stream's leader.
describe('NATS cluster: a node, then the stream leader, killed mid-run and restarted', () => {
  let cluster: NatsCluster | undefined;
  let db: PrivateDatabase | undefined;
  let engine: BuiltinEngine | undefined;
  let store: EventStore | undefined;
  let bus: JetStreamBus | undefined;
  let svcs: Map<PipelineService, ServiceProcess> | undefined;
  let ckptDir = '';
  let sftCheckpoint = '';

  beforeAll(async () => {
    sftCheckpoint = await ensureSftCheckpoint();
    ckptDir = mkdtempSync(join(tmpdir(), 'rstar-nats-failover-'));
    cluster = await NatsCluster.start();
    db = await createPrivateDatabase(PG_URL, `natsfail_${process.pid}_${Date.now()}`);
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: sftCheckpoint, kvCapacityTokens: 160 * 64 });
    svcs = await startPipeline({ natsUrl: cluster.url, databaseUrl: db.url, engineUrl: engine.url, checkpointDir: ckptDir, env: { RSTAR_STREAM_REPLICAS: '3', RSTAR_STREAM_MAX_BYTES: String(STREAM_MAX_BYTES) } });
    store = await EventStore.connect({ connectionString: db.url });
    // The observer and the run's submitter; it leaves the stream's replicas as the services set them.
    bus = await JetStreamBus.connect({ servers: cluster.url, name: 'failover-observer' });
  }, SFT_CHECKPOINT_TIMEOUT_MS + 240_000);

  afterAll(async () => {
    await stopPipeline(svcs);
    await store?.close().catch(() => undefined);
    await bus?.close().catch(() => undefined);
    await engine?.close().catch(() => undefined);
    await cluster?.stop();
    await db?.drop().catch(() => undefined);
    if (ckptDir) rmSync(ckptDir, { recursive: true, force: true });
  }, 60_000);

  /** The stream's info, or undefined while the cluster cannot answer (an election). */
  const streamInfo = async () => {
    try {
      return await bus!.jsm.streams.info(bus!.stream);
    } catch {
      return undefined;
    }
  };
  const archivedOf = async (runId: string, types?: EventType[]) => readRunEvents(store!, runId, types).catch(() => []);
  /**
   * What differs between the stream and the archive, for a failure message: stream messages whose event id the
   * archive lacks (a lost event) and ids stored at two stream sequences (a publish that escaped deduplication).
   */
  const streamArchiveDiff = async (): Promise<string> => {
    const info = await streamInfo();
    if (!info) return 'the stream did not answer';
    const seen = new Map<string, number>();
    const runs = new Set<string>();
    const lines: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await bus!.jsm.streams.getMessage(bus!.stream, { seq }).catch(() => undefined);
      if (!m) continue;
      const ev = JSON.parse(new TextDecoder().decode(m.data)) as { id: string; type: string; runId: string };
      runs.add(ev.runId);
      if (seen.has(ev.id)) lines.push(`${ev.id} at seq ${seen.get(ev.id)} and ${seq} (${m.subject})`);
      seen.set(ev.id, seq);
    }
    const archived = new Set<string>();
    for (const r of runs) for (const e of await archivedOf(r)) archived.add(e.id);
    const missing = [...seen].filter(([id]) => !archived.has(id)).map(([id, seq]) => `${id} (seq ${seq})`);
    return `stream ${info.state.messages} messages, archive of their runs ${archived.size}; not archived: ${missing.slice(0, 8).join(', ') || 'none'}${missing.length > 8 ? ` and ${missing.length - 8} more` : ''}; stored twice: ${lines.slice(0, 8).join(', ') || 'none'}`;
  };

  it('the services created the stream with 3 replicas, one on each node, bounded by RSTAR_STREAM_MAX_BYTES', async () => {
    const info = await until(streamInfo, 'the stream info');
    expect(info.config.num_replicas).toBe(3);
    expect(info.config.max_bytes).toBe(STREAM_MAX_BYTES);
    const peers = [info.cluster?.leader, ...(info.cluster?.replicas ?? []).map((r) => r.name)].sort();
    expect(peers).toEqual(cluster!.names);
  });

  const cases: Array<{ title: string; pick: (leader: string) => Promise<string> }> = [
    {
      title: 'a node with client connections that does not lead the stream',
      pick: async (leader) => {
        const others = cluster!.names.filter((n) => n !== leader);
        const clients = await Promise.all(others.map((n) => cluster!.clients(n)));
        return others[clients.indexOf(Math.max(...clients))];
      },
    },
    { title: 'the stream leader', pick: async (leader) => leader },
  ];

  for (const [i, c] of cases.entries()) {
    it(`${c.title}: SIGKILLed mid-run, restarted; the run completes, archive = stream, nothing lost or doubled`, async () => {
      const runId = ids.newRun();
      const submitted = submitRemoteRun(shortRunConfig(`nats-failover-${i}`, 300 + i, sftCheckpoint, SHAPE), { bus, runId });
      submitted.catch(() => undefined);
      await until(async () => (await archivedOf(runId, ['RolloutCompleted', 'RunCompleted', 'RunFailed'])).length > 0 || undefined, `the first RolloutCompleted of run ${runId}`, { timeoutMs: 150_000, everyMs: 100 });
      const before = await until(streamInfo, 'the stream info before the kill');
      const leader = before.cluster!.leader!;
      const victim = await c.pick(leader);
      const atKill = await archivedOf(runId);
      // The kill must land mid-run, or the test proves nothing.
      expect(atKill.filter((e) => e.type === 'StepCompleted' || e.type === 'RunCompleted')).toHaveLength(0);
      await cluster!.kill(victim);

      // The run goes on with two nodes: a new leader where the leader died, and step 0 completes.
      const during = await until(async () => {
        const info = await streamInfo();
        return info?.cluster?.leader && info.cluster.leader !== victim ? info : undefined;
      }, `a stream leader other than ${victim}`, { timeoutMs: 60_000, everyMs: 200 });
      if (victim !== leader) expect(during.cluster!.leader).toBe(leader);
      await until(async () => (await archivedOf(runId, ['StepCompleted', 'RunFailed'])).length > 0 || undefined, `step 0 of run ${runId} completed while ${victim} is down`, { timeoutMs: 150_000, everyMs: 200 });
      expect(cluster!.running(victim)).toBe(false);
      await cluster!.restart(victim);

      await submitted;
      await until(async () => (await archivedOf(runId, ['RunCompleted'])).length > 0 || undefined, `run ${runId}'s RunCompleted archived`, { timeoutMs: 60_000, everyMs: 200 });
      // Nothing lost or doubled between the bus and the archive: every message the stream stored is archived
      // once (events of both runs of this file; the archive's primary key is the event id).
      const both = await archiveCaughtUp(store!, async () => (await streamInfo())?.state.messages).catch(async (e: Error) => {
        throw new Error(`${e.message}; ${await streamArchiveDiff()}`);
      });
      expect(both).toBeGreaterThan(0);
      expectRunExactlyOnce(await archivedOf(runId), SHAPE);
      // The restarted node is a current replica again (it caught up from its peers).
      await until(async () => {
        const info = await streamInfo();
        const peers = [info?.cluster?.leader, ...(info?.cluster?.replicas ?? []).filter((r) => r.current).map((r) => r.name)];
        return peers.includes(victim) && peers.length === 3;
      }, `${victim} to be a current replica of the stream again`, { timeoutMs: 60_000, everyMs: 250 });
      for (const s of svcs!.values()) expect(s.starts, `${s.opts.name} was never restarted`).toBe(1);
    }, 480_000);
  }
});
