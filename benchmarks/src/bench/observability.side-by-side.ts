import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { ReadModels } from '@rstar/read-models';
import { Archiver } from '@rstar/runtime';
import type { Logger } from '@rstar/telemetry';
import { startBenchProducer } from './bench.producer';
import { startOtlpSink } from './otlp.sink';

/** What {@link observabilitySideBySide} measures with; the servers and run are the events bench's. */
export interface SideBySideOptions {
  n: number;
  producers: number;
  batch: number;
  pgUrl: string;
  natsUrl: string;
  /** Prefix of the private schemas and streams; each round appends its label. */
  tag: string;
  runId: string;
  progress: (msg: string) => void;
  quiet: Logger;
  /** Schemas created here are pushed so the caller drops them. */
  dropSchemas: string[];
}

/** The head sampling ratio of the sampled rounds (what docs/operations.md suggests for production). */
const SAMPLE_RATIO = 0.1;

interface Round {
  eventsPerS: number;
  producerUs: number;
  archiverUs: number;
  projectorEventsPerS: number | null;
  projectorLagAtArchiveEnd: number | null;
}

/**
 * The cost of observability on the event path, side by side in one run: rounds plain, observed, sampled,
 * sampled, observed, plain (ABBA, so load drift on a shared machine cancels out) of the events bench's end-to-end
 * measurement (producers publish on JetStream, the archiver in this process appends). Observed: each
 * producer process runs OpenTelemetry and stamps every event's trace context, exporting its spans over
 * OTLP/HTTP to a sink in this process that discards them, and the read-model projector applies the
 * archive as it grows, as control-plane runs it. Sampled: the same with 10% parent-based head sampling
 * (the unsampled 90% still stamp a context, but make no span to export).
 * @returns `traced_ratio` = observed events/s over plain events/s (the goal is >= 0.85), `sampled_ratio`
 *   the same at 10% sampling, the projector's
 *   rate until it caught up with the archive, its lag when archiving ended, and CPU per event (µs).
 * @throws Error when a round's archive or read models do not hold exactly the run's n events.
 */
export async function observabilitySideBySide(o: SideBySideOptions): Promise<Record<string, number | null>> {
  const sink = await startOtlpSink();
  try {
    const round = (label: string, otlp: boolean, sampleRatio?: number) => endToEndRound(o, `${o.tag}_${label}`, label, otlp ? sink.url : null, sampleRatio);
    // ABBA over three modes: plain, observed (every trace), sampled (10% head sampling), then back.
    const plainA = await round('plain_a', false);
    const observedA = await round('observed_a', true);
    const sampledA = await round('sampled_a', true, SAMPLE_RATIO);
    const sampledB = await round('sampled_b', true, SAMPLE_RATIO);
    const observedB = await round('observed_b', true);
    const plainB = await round('plain_b', false);
    const mean = (a: number, b: number) => (a + b) / 2;
    const plain = mean(plainA.eventsPerS, plainB.eventsPerS);
    const observed = mean(observedA.eventsPerS, observedB.eventsPerS);
    const sampled = mean(sampledA.eventsPerS, sampledB.eventsPerS);
    o.progress(
      `observability: plain ${Math.round(plain)} events/s, observed ${Math.round(observed)} events/s, ${SAMPLE_RATIO * 100}% sampled ${Math.round(sampled)} events/s; ` +
        `OTLP sink got ${sink.requests()} exports, ${(sink.bytes() / 1e6).toFixed(1)} MB`,
    );
    return {
      plain_events_per_s: Math.round(plain),
      traced_events_per_s: Math.round(observed),
      traced_ratio: Number((observed / plain).toFixed(3)),
      sampled_events_per_s: Math.round(sampled),
      sampled_ratio: Number((sampled / plain).toFixed(3)),
      projector_events_per_s: Math.round(mean(observedA.projectorEventsPerS!, observedB.projectorEventsPerS!)),
      projector_lag_at_archive_end: Math.max(observedA.projectorLagAtArchiveEnd!, observedB.projectorLagAtArchiveEnd!),
      plain_producer_cpu_us_per_event: Number(mean(plainA.producerUs, plainB.producerUs).toFixed(1)),
      traced_producer_cpu_us_per_event: Number(mean(observedA.producerUs, observedB.producerUs).toFixed(1)),
      sampled_producer_cpu_us_per_event: Number(mean(sampledA.producerUs, sampledB.producerUs).toFixed(1)),
      plain_archiver_cpu_us_per_event: Number(mean(plainA.archiverUs, plainB.archiverUs).toFixed(1)),
      traced_archiver_cpu_us_per_event: Number(mean(observedA.archiverUs, observedB.archiverUs).toFixed(1)),
      otlp_span_bytes: sink.bytes(),
    };
  } finally {
    await sink.close();
  }
}

/** One round: a fresh schema and stream; with `otlp`, traced producers and the projector running. */
async function endToEndRound(o: SideBySideOptions, stamp: string, label: string, otlp: string | null, sampleRatio?: number): Promise<Round> {
  const store = await EventStore.connect({ connectionString: o.pgUrl, schema: stamp });
  o.dropSchemas.push(stamp);
  const archBus = await JetStreamBus.connect({ servers: o.natsUrl, stream: stamp.toUpperCase(), subjectPrefix: stamp, name: 'bench-archiver', logger: o.quiet });
  const archiver = new Archiver(archBus, store, { logger: o.quiet, batchSize: o.batch });
  await archiver.start();
  const rm = otlp ? await ReadModels.open({ connectionString: o.pgUrl, schema: stamp, poolSize: 2 }) : null;
  const projector = rm?.projector({ logger: o.quiet }) ?? null;
  try {
    let published = 0;
    let producerCpuUs = 0;
    const share = Math.ceil(o.n / o.producers);
    const children = await Promise.all(
      Array.from({ length: o.producers }, (_, p) =>
        startBenchProducer(
          { natsUrl: o.natsUrl, tag: stamp, runId: o.runId, from: p * share, to: Math.min(o.n, (p + 1) * share), otlp, sampleRatio },
          (k) => (published += k),
          (us) => (producerCpuUs += us),
        ),
      ),
    );
    // The clock starts once every producer is connected and holds its events: start-up is not measured.
    projector?.start();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const publishing = Promise.all(children.map((c) => c.go()));
    let lastReport = performance.now();
    while (archiver.stats.archived < o.n) {
      if (performance.now() - lastReport > 2000) {
        o.progress(`${label}: published ${published}, archived ${archiver.stats.archived}`);
        lastReport = performance.now();
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const e2eS = (performance.now() - t0) / 1000;
    const cpu1 = process.cpuUsage(cpu0);
    await publishing;
    const stored = await store.count(o.runId);
    if (stored !== o.n) throw new Error(`${label}: the archive holds ${stored} events of the run, expected ${o.n}`);
    let projectorS: number | null = null;
    let projectorLagAtArchiveEnd: number | null = null;
    if (projector && rm) {
      projectorLagAtArchiveEnd = await projector.lag();
      while ((await projector.checkpoint()).events < o.n) await new Promise((r) => setTimeout(r, 20));
      projectorS = (performance.now() - t0) / 1000;
      await projector.stop();
      const projected = (await rm.repository.runSummary(o.runId))?.events;
      if (projected !== o.n) throw new Error(`${label}: the read models counted ${projected} events of the run, expected ${o.n}`);
    }
    const r: Round = {
      eventsPerS: o.n / e2eS,
      producerUs: producerCpuUs / o.n,
      archiverUs: (cpu1.user + cpu1.system) / o.n,
      projectorEventsPerS: projectorS ? o.n / projectorS : null,
      projectorLagAtArchiveEnd,
    };
    o.progress(
      `${label}: ${Math.round(r.eventsPerS)} events/s (${e2eS.toFixed(1)} s); CPU per event: producers ${r.producerUs.toFixed(1)} µs, archiver process ${r.archiverUs.toFixed(1)} µs` +
        (projectorS ? `; projector caught up after ${projectorS.toFixed(1)} s (${projectorLagAtArchiveEnd} behind when archiving ended)` : ''),
    );
    return r;
  } finally {
    await projector?.stop().catch(() => undefined);
    await rm?.close().catch(() => undefined);
    await archiver.stop();
    await archBus.jsm.streams.delete(archBus.stream).catch(() => undefined);
    await archBus.close();
    await store.close();
  }
}
