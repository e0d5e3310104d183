import { spawn } from 'node:child_process';
import { JetStreamBus } from '@rstar/messaging';
import { createLogger, rstarTracer, startTracing, tracingHandle } from '@rstar/telemetry';
import { makeEvents } from './bench.events';

/** One producer process of the events benchmarks (plain, observed, kafka): events [from, to) of the bench's run. */
export interface BenchProducerJob {
  natsUrl: string;
  tag: string;
  runId: string;
  from: number;
  to: number;
  /** OTLP endpoint: the producer runs OpenTelemetry and exports its spans there (null: tracing off). */
  otlp: string | null;
  /** Head sampling ratio with tracing on (`parentbased_traceidratio`); default 1, every trace. */
  sampleRatio?: number;
}

/**
 * Start a producer process; it connects, builds its events, reports ready, and publishes them in chunks
 * of 1,000 when `go()` is called. With `job.otlp` it starts OpenTelemetry first, as a service's main does,
 * so every publish makes a producer span and stamps the event's trace context. `onProgress` gets the
 * count of each acked chunk, `onCpu` the process's CPU time while publishing (µs).
 */
export function startBenchProducer(job: BenchProducerJob, onProgress: (k: number) => void, onCpu: (us: number) => void): Promise<{ go: () => Promise<void> }> {
  return new Promise((ready, reject) => {
    const otel = job.otlp
      ? {
          OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: job.otlp, OTEL_BSP_MAX_QUEUE_SIZE: '65536', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4096', OTEL_BSP_SCHEDULE_DELAY: '500',
          ...(job.sampleRatio !== undefined ? { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(job.sampleRatio) } : {}),
        }
      : { OTEL_SDK_DISABLED: 'true' };
    const child = spawn(process.execPath, ['--import', 'tsx', __filename], {
      env: { ...process.env, ...otel, RSTAR_BENCH_PRODUCER: JSON.stringify(job) },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const exited = new Promise<void>((res, rej) => child.on('exit', (code) => (code === 0 ? res() : rej(new Error(`producer exited with ${code}`)))));
    exited.catch(reject);
    child.stdout!.on('data', (d: Buffer) => {
      for (const line of d.toString().split('\n').filter(Boolean)) {
        if (line === 'ready') ready({ go: () => (child.stdin!.end('go\n'), exited) });
        else if (line.startsWith('cpu ')) onCpu(Number(line.slice(4)));
        else onProgress(Number(line));
      }
    });
  });
}

async function producerMain(job: BenchProducerJob): Promise<void> {
  if (job.otlp) {
    // One span exported before the clock starts: the SDK loads its exporter, serializer and HTTP
    // transport on first use, a one-off start-up cost (about 0.3 s) that a service pays once, not per event.
    startTracing('bench-producer');
    rstarTracer().startSpan('warm-up').end();
    await tracingHandle()?.flush();
  }
  const events = makeEvents(job.runId, job.to, job.from);
  const bus = await JetStreamBus.connect({
    servers: job.natsUrl,
    stream: job.tag.toUpperCase(),
    subjectPrefix: job.tag,
    name: `bench-producer-${job.from}`,
    logger: createLogger('bench-producer', { level: 'warn' }),
  });
  process.stdout.write('ready\n');
  await new Promise<void>((r) => process.stdin.once('data', () => r()));
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < events.length; i += 1000) {
    const chunk = events.slice(i, i + 1000);
    await bus.publish(chunk);
    process.stdout.write(`${chunk.length}\n`);
  }
  await bus.close();
  // The spans still queued are exported before the CPU is read: their cost is part of tracing's.
  await tracingHandle()?.shutdown();
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(`cpu ${cpu.user + cpu.system}\n`);
}

if (process.env.RSTAR_BENCH_PRODUCER) {
  producerMain(JSON.parse(process.env.RSTAR_BENCH_PRODUCER)).then(
    () => process.exit(0),
    (e) => {
      process.stderr.write(`producer: ${(e as Error).stack}\n`);
      process.exit(1);
    },
  );
}
