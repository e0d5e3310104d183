import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { createRegrader } from '@rstar/replay';
import { generateSyntheticRun, kafkaMissing, skipUnlessCi, startKafkaBroker, until, type KafkaBroker } from '@rstar/testing';
import { KafkaExporter, readTopicToEnd } from './index';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const schema = `kx${process.pid}${Date.now().toString(36)}`;
const missing = skipUnlessCi(kafkaMissing());

/** Every archived event in archive order (what the topic must hold, per run). */
async function archiveOrder(store: EventStore): Promise<RstarEvent[]> {
  // A snapshot: paging with the log's in-flight horizon stops early while another test's transaction is open.
  return store.readAllSnapshot();
}

/** Check the topic against the archive: each event exactly once, each run's events in archive order, keyed by run. */
async function expectTopicMirrorsArchive(broker: string, topic: string, store: EventStore): Promise<void> {
  const archived = await archiveOrder(store);
  const msgs = await readTopicToEnd({ brokers: [broker] }, topic);
  const ids = msgs.map((m) => m.headers['rstar-event-id']);
  expect(new Set(ids).size, 'no event twice').toBe(ids.length);
  expect(ids.length).toBe(archived.length);
  const byRun = new Map<string, string[]>();
  for (const m of msgs) byRun.set(m.key, [...(byRun.get(m.key) ?? []), m.headers['rstar-event-id']]);
  const partitionOfRun = new Map<string, number>();
  for (const m of msgs) {
    expect(partitionOfRun.get(m.key) ?? m.partition, `run ${m.key} in one partition`).toBe(m.partition);
    partitionOfRun.set(m.key, m.partition);
    expect(JSON.parse(m.value).id).toBe(m.headers['rstar-event-id']);
  }
  for (const [runId, got] of byRun) expect(got, `order of run ${runId}`).toEqual(archived.filter((e) => e.runId === runId).map((e) => e.id));
}

describe.skipIf(missing)('Kafka export over a real broker (KRaft)', () => {
  let broker: KafkaBroker;
  let store: EventStore;

  beforeAll(async () => {
    broker = await startKafkaBroker();
    store = await EventStore.connect({ connectionString: PG_URL, schema });
  }, 180_000);

  afterAll(async () => {
    await broker?.destroy();
    await store?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  }, 60_000);

  it('exports every archived event once, keyed by run, in archive order per run; resumes from the stored position', async () => {
    for (const [i, runId] of ['run-a', 'run-b', 'run-c'].entries()) {
      const events = await generateSyntheticRun({ grade: createRegrader(), runId, seed: i, steps: 2, promptsPerStep: 3, samples: 4, keep: 2, responseChars: 40 });
      for (let k = 0; k < events.length; k += 50) await store.appendBatch(events.slice(k, k + 50));
    }
    const first = new KafkaExporter({ connectionString: PG_URL, schema, brokers: [broker.broker], topic: 'export-a', partitions: 3, batchSize: 64 });
    await first.connect();
    const half = Math.floor((await store.count()) / 2);
    let done = 0;
    while (done < half) done += await first.exportBatch();
    await first.stop();
    const second = new KafkaExporter({ connectionString: PG_URL, schema, brokers: [broker.broker], topic: 'export-a', partitions: 3, batchSize: 64 });
    await second.connect();
    expect(done + (await second.catchUp())).toBe(await store.count());
    expect(await second.lag()).toBe(0);
    await second.stop();
    await expectTopicMirrorsArchive(broker.broker, 'export-a', store);
  }, 180_000);

  it('events produced and acknowledged but whose position was not stored (a crash in between) are not produced again', async () => {
    const exporter = new KafkaExporter({ connectionString: PG_URL, schema, brokers: [broker.broker], topic: 'export-b', partitions: 4, batchSize: 100 });
    await exporter.connect();
    await exporter.exportBatch();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    const before = (await c.query(`SELECT txid, position, events, offsets FROM "${schema}".kafka_export_positions WHERE topic = 'export-b'`)).rows[0];
    await exporter.exportBatch();
    await exporter.exportBatch();
    await exporter.stop();
    // What a process killed right after its produces were acknowledged leaves behind: the old position.
    await c.query(`UPDATE "${schema}".kafka_export_positions SET txid = $1, position = $2, events = $3, offsets = $4 WHERE topic = 'export-b'`, [
      before.txid, before.position, before.events, before.offsets,
    ]);
    await c.end();
    const restarted = new KafkaExporter({ connectionString: PG_URL, schema, brokers: [broker.broker], topic: 'export-b', partitions: 4, batchSize: 37 });
    await restarted.connect();
    await restarted.catchUp();
    await restarted.stop();
    await expectTopicMirrorsArchive(broker.broker, 'export-b', store);
  }, 180_000);

  it('keeps exporting across a broker restart, with no event lost or doubled', async () => {
    const exporter = new KafkaExporter({ connectionString: PG_URL, schema, brokers: [broker.broker], topic: 'export-c', partitions: 2, batchSize: 50, pollMs: 50 });
    exporter.start();
    await until(async () => (await exporter.exportedPosition().catch(() => ({ events: 0 }))).events > 0 || null, 'the first exported batch', { timeoutMs: 120_000 });
    await broker.stop();
    const more = await generateSyntheticRun({ grade: createRegrader(), runId: 'run-d', seed: 9, steps: 2, promptsPerStep: 3, samples: 4, keep: 2, responseChars: 40 });
    await store.appendBatch(more);
    await broker.start();
    const total = await store.count();
    await until(async () => (await exporter.exportedPosition()).events === total || null, 'every event exported after the restart', { timeoutMs: 180_000 });
    await exporter.stop();
    await expectTopicMirrorsArchive(broker.broker, 'export-c', store);
  }, 400_000);
});
