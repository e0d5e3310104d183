import { ids } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { KafkaExporter } from '@rstar/kafka-export';
import { createLogger } from '@rstar/telemetry';
import { makeEvents } from './bench.events';
import { startKafkaBroker } from '@rstar/testing';
import { dropBenchSchemas, intArg } from './bench.args';

/**
 * `pnpm bench kafka [--events N] [--runs R] [--batch B]`: does the Kafka export keep up with the archive?
 * N (default 50,000) events of ~1 KB over R runs (default 4) are appended to a private archive schema as
 * fast as the archive takes them (`EventStore.appendBatch`, 500 per batch: the anchor, measured in the
 * same run), while a {@link KafkaExporter} (B events per produce request, default 500, as control-plane
 * runs it) mirrors them to a private single-node KRaft broker (infra/local/kafka.sh, or RSTAR_KAFKA_BROKERS).
 * Reports the archive rate, the export rate until it caught up, the export's lag when archiving ended and
 * at the end (0), and `ratio` = export rate over archive rate. Postgres: RSTAR_DATABASE_URL, else the
 * test database. The schema (and the private broker with the topic) are dropped at the end; on an external
 * broker the topic (named like the schema) stays.
 * @throws Error when the stored export position does not count exactly the N archived events.
 */
export async function run(args: string[]): Promise<object> {
  const n = intArg(args, '--events', 50_000);
  const runs = intArg(args, '--runs', 4);
  const batch = intArg(args, '--batch', 500);
  const pgUrl = process.env.RSTAR_DATABASE_URL || process.env.RSTAR_TEST_DATABASE_URL || 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
  const schema = `benchkafka${process.pid}${Date.now().toString(36)}`;
  const progress = (msg: string) => process.stderr.write(`[kafka] ${msg}\n`);
  const quiet = createLogger('bench', { level: 'warn' });

  const external = process.env.RSTAR_KAFKA_BROKERS;
  const kafka = external ? { broker: external.split(',')[0], destroy: async () => undefined } : await startKafkaBroker();
  progress(`${n} events over ${runs} runs; broker ${kafka.broker}${external ? '' : ' (private)'}, Postgres ${pgUrl.replace(/:[^:@/]+@/, ':***@')}`);
  const store = await EventStore.connect({ connectionString: pgUrl, schema });
  const exporter = new KafkaExporter({ connectionString: pgUrl, schema, brokers: [kafka.broker], topic: schema, partitions: 6, batchSize: batch, pollMs: 50, logger: quiet });
  try {
    await exporter.connect();
    // Built ahead, so the archive rate is the insert's, not the event factory's.
    const share = Math.ceil(n / runs);
    const events = Array.from({ length: runs }, () => ids.newRun()).flatMap((runId, r) => makeEvents(runId, Math.min(n, (r + 1) * share) - r * share));
    exporter.start();
    const t0 = performance.now();
    // Runs interleaved, as concurrent runs archive: 500 events of each run in turn.
    const perRun = Array.from({ length: runs }, (_, r) => events.slice(r * share, Math.min(n, (r + 1) * share)));
    let appended = 0;
    let lastReport = t0;
    for (let i = 0; appended < n; i += 500) {
      for (const evs of perRun) {
        const chunk = evs.slice(i, i + 500);
        if (!chunk.length) continue;
        await store.appendBatch(chunk);
        appended += chunk.length;
      }
      if (performance.now() - lastReport > 2000) {
        progress(`archived ${appended}, exported ${(await exporter.exportedPosition()).events}`);
        lastReport = performance.now();
      }
    }
    const archiveS = (performance.now() - t0) / 1000;
    const lagAtArchiveEnd = n - (await exporter.exportedPosition()).events;
    while ((await exporter.exportedPosition()).events < n) await new Promise((r) => setTimeout(r, 20));
    const exportS = (performance.now() - t0) / 1000;
    await exporter.stop();
    const check = new KafkaExporter({ connectionString: pgUrl, schema, brokers: [kafka.broker], topic: schema, logger: quiet });
    await check.connect();
    const lagAtEnd = await check.lag();
    const exported = (await check.exportedPosition()).events;
    await check.stop();
    if (exported !== n || lagAtEnd !== 0) throw new Error(`the export position counts ${exported} events (lag ${lagAtEnd}), expected ${n} (lag 0)`);
    const archivePerS = n / archiveS;
    const exportPerS = n / exportS;
    progress(`archive ${Math.round(archivePerS)} events/s (${archiveS.toFixed(1)} s); export caught up after ${exportS.toFixed(1)} s (${Math.round(exportPerS)} events/s), ${lagAtArchiveEnd} behind when archiving ended`);
    return {
      bench: 'kafka',
      exported_events_per_s: Math.round(exportPerS),
      archive_events_per_s: Math.round(archivePerS),
      ratio: Number((exportPerS / archivePerS).toFixed(3)),
      lag_at_archive_end: lagAtArchiveEnd,
      lag_at_end: lagAtEnd,
      catch_up_s: Number((exportS - archiveS).toFixed(2)),
      events: n,
      runs,
      batch,
    };
  } finally {
    await exporter.stop().catch(() => undefined);
    await store.close().catch(() => undefined);
    await kafka.destroy();
    await dropBenchSchemas(pgUrl, [schema]);
  }
}

