import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { readTopicToEnd } from '@rstar/kafka-export';
import { createRegrader } from '@rstar/replay';
import { freeLocalPort, generateSyntheticRun, type KafkaBroker, kafkaMissing, skipUnlessCi, startKafkaBroker, until } from '@rstar/testing';
import { createPrivateDatabase, ServiceProcess, startPrivateNats, type PrivateDatabase, type PrivateNats } from '../support/service-process';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const TOPIC = 'rstar.e2e';
const missing = skipUnlessCi(kafkaMissing());

/**
 * The Kafka export as it runs in production: control-plane (its own main.ts, a real process) exports the
 * archive of a private database to a private KRaft broker. The exporter is SIGKILLed mid-stream and
 * restarted, then the broker is restarted mid-stream; at the end the topic holds exactly the archived
 * events of the run, once each, in archive order, all in one partition (keyed by run id).
 */
describe.skipIf(missing)('Kafka export: control-plane SIGKILLed mid-stream and the broker restarted', () => {
  const dbName = `kafka_e2e_${process.pid}_${Date.now()}`;
  let nats: PrivateNats | undefined;
  let db: PrivateDatabase | undefined;
  let kafka: KafkaBroker | undefined;
  let store: EventStore | undefined;
  let cp: ServiceProcess | undefined;
  const runId = 'kafka-e2e-run';
  const archived: RstarEvent[] = [];

  const exported = async (): Promise<number> => {
    try {
      const r = (await (await fetch(`http://127.0.0.1:${cp!.opts.port}/v1/projections`, { signal: AbortSignal.timeout(5_000) })).json()) as { kafka: { events: number } | null };
      return r.kafka?.events ?? 0;
    } catch {
      return 0;
    }
  };

  beforeAll(async () => {
    [nats, db, kafka] = await Promise.all([startPrivateNats(), createPrivateDatabase(PG_URL, dbName), startKafkaBroker()]);
    store = await EventStore.connect({ connectionString: db.url });
    const events = await generateSyntheticRun({ grade: createRegrader(), runId, seed: 21, steps: 6, promptsPerStep: 8, samples: 8, keep: 4, responseChars: 20 });
    for (let i = 0; i < events.length; i += 500) await store.appendBatch(events.slice(i, i + 500));
    archived.push(...(await store.readAllSnapshot()));
    cp = new ServiceProcess({
      name: 'control-plane',
      entry: 'services/control-plane/src/main.ts',
      port: await freeLocalPort(),
      // Small produce requests, so the export takes long enough to be interrupted mid-stream.
      env: { RSTAR_NATS_URL: nats.url, RSTAR_DATABASE_URL: db.url, RSTAR_LOG_LEVEL: 'warn', RSTAR_PROJECTOR: 'off', OTEL_SDK_DISABLED: 'true', RSTAR_KAFKA_BROKERS: kafka.broker, RSTAR_KAFKA_TOPIC: TOPIC, RSTAR_KAFKA_PARTITIONS: '3', RSTAR_KAFKA_BATCH: '10' },
    });
  }, 300_000);

  afterAll(async () => {
    await cp?.stop();
    await store?.close().catch(() => undefined);
    await Promise.all([nats?.stop(), kafka?.destroy(), db?.drop()].map((p) => p?.catch(() => undefined)));
  }, 120_000);

  it('the topic holds exactly the archived events of the run, once each, in order', async () => {
    const total = archived.length;
    expect(total, "enough events to interrupt the export mid-stream").toBeGreaterThan(2000);
    await cp!.start();
    const atKill = await until(async () => {
      const n = await exported();
      return n > 0 ? n : null;
    }, 'the export to start', { timeoutMs: 120_000, everyMs: 50 });
    await cp!.kill();
    const c = new Client({ connectionString: db!.url });
    await c.connect();
    const stored = Number((await c.query(`SELECT events FROM rstar.kafka_export_positions WHERE topic = $1`, [TOPIC])).rows[0].events);
    await c.end();
    // The kill must land mid-stream, or the test proves nothing.
    expect(atKill).toBeLessThan(total);
    expect(stored).toBeLessThan(total);

    await cp!.start();
    await until(async () => ((await exported()) > stored + 200 ? true : null), 'the restarted exporter to go on', { timeoutMs: 120_000, everyMs: 50 });
    const beforeRestart = await exported();
    expect(beforeRestart).toBeLessThan(total);
    await kafka!.stop();
    await kafka!.start();
    await until(async () => ((await exported()) === total ? true : null), 'every event exported after the broker restart', { timeoutMs: 300_000, everyMs: 250 });

    const msgs = await readTopicToEnd({ brokers: [kafka!.broker] }, TOPIC);
    const ids = msgs.map((m) => m.headers['rstar-event-id']);
    expect(new Set(ids).size, 'no event twice').toBe(ids.length);
    expect(ids).toEqual(archived.map((e) => e.id));
    expect(new Set(msgs.map((m) => m.partition)).size, 'one run, one partition').toBe(1);
    expect(msgs.every((m) => m.key === runId)).toBe(true);
    const positions = msgs.map((m) => Number(m.headers['rstar-archive-position']));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    const { id, type, version, streamId, data, meta } = archived[0];
    expect(JSON.parse(msgs[0].value)).toEqual({ id, type, version, runId, streamId, data, meta });
  }, 900_000);
});
