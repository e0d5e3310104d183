import { ids } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { Archiver } from '@rstar/runtime';
import { JetStreamBus } from '@rstar/messaging';
import { createLogger } from '@rstar/telemetry';
import { securedSideBySide } from './secured-events';
import { observabilitySideBySide } from './observability.side-by-side';
import { makeEvents } from './bench.events';
import { startBenchProducer } from './bench.producer';
import { dropBenchSchemas, intArg } from './bench.args';

/**
 * `pnpm bench events [--events N] [--producers P] [--batch B]`: end-to-end events/s (publish on JetStream ->
 * archived in Postgres by the archiver) for N (default 100,000) events of ~1 KB on the real servers,
 * and in the same run the ceiling: the raw rate of the archive's `unnest` batch insert
 * (`EventStore.appendBatch`, batches of B (default 500, the archiver's), two in flight, as the archiver runs them) on the same
 * events in a fresh table. Producers run as separate processes (as services do), the archiver in this
 * one (started by `pnpm bench` with `--max-semi-space-size=64`, as the control-plane runs). Servers: RSTAR_NATS_URL / RSTAR_DATABASE_URL, else the test servers. Uses a private schema and
 * stream, dropped at the end.
 *
 * Security overhead (`secured_ratio`, goal >= 0.85): `securedSideBySide` (./secured-events.ts) runs the
 * same end-to-end path open and with NATS users, per-subject permissions and Ed25519 signatures, side by
 * side on private nats-servers in this run.
 *
 * Observability overhead, side by side in the same run (observability.side-by-side.ts): rounds plain,
 * observed, observed, plain, observed = producers tracing over OTLP and the read-model projector running;
 * `traced_ratio` = observed events/s over plain events/s (goal >= 0.85).
 */
export async function run(args: string[]): Promise<object> {
  const n = intArg(args, '--events', 100_000);
  const producers = intArg(args, '--producers', 4);
  const batch = intArg(args, '--batch', 500);
  const pgUrl = process.env.RSTAR_DATABASE_URL || process.env.RSTAR_TEST_DATABASE_URL || 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
  const natsUrl = process.env.RSTAR_NATS_URL || process.env.RSTAR_TEST_NATS_URL || 'nats://127.0.0.1:4222';
  const tag = `bench${process.pid}${Date.now().toString(36)}`;
  const quiet = createLogger('bench', { level: 'warn' });
  const progress = (msg: string) => process.stderr.write(`[events] ${msg}\n`);

  const runId = ids.newRun();
  const sample = makeEvents(runId, Math.min(n, 1000));
  const avgBytes = Math.round(sample.reduce((s, e) => s + JSON.stringify(e).length, 0) / sample.length);
  progress(`${n} events of ~${avgBytes} bytes, ${producers} producers; NATS ${natsUrl}, Postgres ${pgUrl.replace(/:[^:@/]+@/, ':***@')}`);

  const dropSchemas: string[] = [];
  try {
    // Ceiling: the archive insert alone, measured before and after the end-to-end run (the mean), since
    // load on a shared machine drifts.
    const ceilingRun = async (label: string): Promise<number> => {
      // Built here and dropped after: the archiver below shares this process, and 100k live event objects
      // (~100 MB) would make every old-space GC of the end-to-end run mark them, which a control-plane
      // process holding only its in-flight batches never pays.
      const events = makeEvents(runId, n);
      const schema = `${tag}_ceiling_${label}`;
      const ceilingStore = await EventStore.connect({ connectionString: pgUrl, schema, appendMethod: 'unnest' });
      dropSchemas.push(schema);
      const t = performance.now();
      let next = 0;
      const appender = async () => {
        while (next < n) {
          const i = next;
          next += batch;
          await ceilingStore.appendBatch(events.slice(i, i + batch));
        }
      };
      await Promise.all([appender(), appender()]);
      const rate = n / ((performance.now() - t) / 1000);
      progress(`ceiling ${label} (unnest appendBatch, ${batch}/batch, 2 in flight): ${Math.round(rate)} events/s`);
      await ceilingStore.close();
      return rate;
    };
    const ceilingBefore = await ceilingRun('before');
    let t0 = 0;

    // End to end: producers publish on JetStream, the archiver consumes and appends.
    const store = await EventStore.connect({ connectionString: pgUrl, schema: `${tag}_e2e` });
    dropSchemas.push(`${tag}_e2e`);
    const archBus = await JetStreamBus.connect({ servers: natsUrl, stream: tag.toUpperCase(), subjectPrefix: tag, name: 'bench-archiver', logger: quiet });
    const archiver = new Archiver(archBus, store, { logger: quiet, batchSize: batch });
    await archiver.start();
    let published = 0;
    let producerCpuUs = 0;
    const share = Math.ceil(n / producers);
    const children = await Promise.all(
      Array.from({ length: producers }, (_, p) =>
        startBenchProducer(
          { natsUrl, tag, runId, from: p * share, to: Math.min(n, (p + 1) * share), otlp: null },
          (k) => (published += k),
          (us) => (producerCpuUs += us),
        ),
      ),
    );
    // The clock starts once every producer is connected and holds its events: process start-up is not measured.
    t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const publishing = Promise.all(children.map((c) => c.go()));
    let lastReport = performance.now();
    let archived = 0;
    for (;;) {
      archived = archiver.stats.archived;
      if (archived >= n) break;
      if (performance.now() - lastReport > 2000) {
        progress(`published ${published}, archived ${archived}`);
        lastReport = performance.now();
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const e2eS = (performance.now() - t0) / 1000;
    const cpu1 = process.cpuUsage(cpu0);
    await publishing;
    const stored = await store.count(runId);
    if (stored !== n) throw new Error(`archive holds ${stored} events of the run, expected ${n}`);
    const eventsPerS = n / e2eS;
    // CPU per event (µs) of the producers while publishing and of the archiver process (it also runs this loop).
    const producerUsPerEvent = producerCpuUs / n;
    const archiverUsPerEvent = (cpu1.user + cpu1.system) / n;
    progress(
      `end to end: ${Math.round(eventsPerS)} events/s (${e2eS.toFixed(1)} s); CPU per event: producers ${producerUsPerEvent.toFixed(1)} µs, archiver ${archiverUsPerEvent.toFixed(1)} µs`,
    );
    await archiver.stop();
    await archBus.jsm.streams.delete(archBus.stream).catch(() => undefined);
    await archBus.close();
    await store.close();
    const observability = await observabilitySideBySide({ n, producers, batch, pgUrl, natsUrl, tag, runId, progress, quiet, dropSchemas });
    const ceiling = (ceilingBefore + (await ceilingRun('after'))) / 2;
    const secured = await securedSideBySide({ n, producers, batch, pgUrl, tag, progress, quiet, dropSchemas });
    return {
      bench: 'events',
      events_per_s: Math.round(eventsPerS),
      ceiling_per_s: Math.round(ceiling),
      ratio: Number((eventsPerS / ceiling).toFixed(3)),
      events: n,
      event_bytes: avgBytes,
      producers,
      batch,
      producer_cpu_us_per_event: Number(producerUsPerEvent.toFixed(1)),
      archiver_cpu_us_per_event: Number(archiverUsPerEvent.toFixed(1)),
      ...secured,
      ...observability,
    };
  } finally {
    await dropBenchSchemas(pgUrl, dropSchemas);
  }
}

