import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus, securedBusOptionsFromEnv } from '@rstar/messaging';
import { Archiver } from '@rstar/runtime';
import { generateSecrets, securityFromEnv, type GeneratedSecrets } from '@rstar/security';
import { natsServerVersion, startNatsServer } from '@rstar/testing';
import { createLogger, type Logger } from '@rstar/telemetry';
import { makeEvents } from './bench.events';

/** What `securedSideBySide` needs from the calling benchmark. */
export interface SecuredSideBySideOptions {
  /** Events per round. */
  n: number;
  /** Producer processes per round. */
  producers: number;
  /** The archiver's batch size. */
  batch: number;
  /** Postgres for the rounds' private schemas. */
  pgUrl: string;
  /** Unique tag: schemas `<tag>_open0`.., stream `<TAG>`, subjects `<tag>.>`. */
  tag: string;
  progress: (msg: string) => void;
  quiet: Logger;
  /** Schemas created here are pushed onto it; the caller drops them. */
  dropSchemas: string[];
}

/** The figures for the JSON line: rates in events/s; `secured_ratio` = secured / open (goal >= 0.85). */
export type SecuredFigures =
  | {
      nats_server: string;
      open_events_per_s: number;
      /** Authenticated, permissioned, only control events signed (the earlier secured mode): bulk events unsigned. */
      control_signed_events_per_s: number;
      secured_events_per_s: number;
      secured_ratio: number;
      /** Secured with every event signed and verified, over secured with bulk events unsigned: the cost of signing every event. */
      all_signed_ratio: number;
    }
  | { secured_ratio: null; secured_skipped: string };

/**
 * Security overhead of the event path, measured side by side: rounds open, control, secured, secured,
 * control, open (mirrored, so load drift on a shared machine cancels) on fresh private nats-servers that
 * differ only in security. The secured and control rounds use the users and per-subject permissions
 * `rstar security init` generates: the producers connect as tool-execution with its nkey, the archiver as
 * the control plane. In a secured round the producers sign every event (Ed25519 over Merkle chunks) and
 * the archiver verifies every one (the default now); in a control round the bulk events go unsigned and
 * only control events would be verified (the earlier default), so `all_signed_ratio` = secured / control
 * is the cost of signing every event (and of the keyed chain: a secured round's archiver signs its chain
 * checkpoints), and `secured_ratio` = secured / open the whole cost of security. Each round times from the moment every producer process
 * holds its events until all `n` are in the archive, then checks the count (and, secured, the
 * signatures). Returns null figures with the reason when nats-server is not on PATH.
 */
export async function securedSideBySide(o: SecuredSideBySideOptions): Promise<SecuredFigures> {
  const version = natsServerVersion();
  if (!version) {
    o.progress('secured side by side: skipped, no nats-server on PATH');
    return { secured_ratio: null, secured_skipped: 'nats-server not on PATH' };
  }
  const dir = mkdtempSync(join(tmpdir(), 'rstar-bench-secrets-'));
  const scope = { stream: o.tag.toUpperCase(), subjectPrefix: o.tag };
  const secrets = generateSecrets({ outDir: join(dir, 'secrets'), principals: ['control-plane', 'tool-execution'], scope });
  try {
    const rates: Record<'open' | 'control' | 'secured', number[]> = { open: [], control: [], secured: [] };
    // Mirrored order (ABCCBA), so load drift on a shared machine cancels.
    const modes = ['open', 'control', 'secured', 'secured', 'control', 'open'] as const;
    for (const [i, mode] of modes.entries()) {
      const schema = `${o.tag}_${mode}${i}`;
      o.dropSchemas.push(schema);
      const server = await startNatsServer(mode !== 'open' ? { config: secrets.natsAuthConfig } : {});
      try {
        const label = `${mode} (round ${i + 1} of ${modes.length})`;
        rates[mode].push(await round(o, { natsUrl: server.url, schema, label, secrets: mode !== 'open' ? secrets : undefined, controlOnly: mode === 'control' }));
      } finally {
        await server.stop();
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const ratio = mean(rates.secured) / mean(rates.open);
    const allSigned = mean(rates.secured) / mean(rates.control);
    o.progress(
      `secured side by side on nats-server ${version}: open ${Math.round(mean(rates.open))} events/s, control events signed ${Math.round(mean(rates.control))} events/s, every event signed ${Math.round(mean(rates.secured))} events/s; secured/open ${ratio.toFixed(3)}, all signed/control signed ${allSigned.toFixed(3)}`,
    );
    return {
      nats_server: version,
      open_events_per_s: Math.round(mean(rates.open)),
      control_signed_events_per_s: Math.round(mean(rates.control)),
      secured_events_per_s: Math.round(mean(rates.secured)),
      secured_ratio: Number(ratio.toFixed(3)),
      all_signed_ratio: Number(allSigned.toFixed(3)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One round; returns events/s end to end. */
async function round(o: SecuredSideBySideOptions, r: { natsUrl: string; schema: string; label: string; secrets?: GeneratedSecrets; controlOnly?: boolean }): Promise<number> {
  const runId = `bench-secured-${o.tag}`;
  const store = await EventStore.connect({ connectionString: o.pgUrl, schema: r.schema });
  const archBus = await JetStreamBus.connect({
    servers: r.natsUrl,
    stream: o.tag.toUpperCase(),
    subjectPrefix: o.tag,
    name: 'bench-archiver',
    logger: o.quiet,
    // Control-only round: the archiver checks signatures of the control events only (the earlier default).
    ...(r.secrets ? securedBusOptionsFromEnv('control-plane', { RSTAR_SECRETS_DIR: r.secrets.principals['control-plane'].dir, ...(r.controlOnly ? { RSTAR_VERIFY_EVENT_TYPES: 'PolicyUpdated,RunStarted' } : {}) }) : {}),
  });
  // Secured rounds: the keyed chain too (checkpoints signed with the control plane's key, as its archiver does).
  const signer = r.secrets && !r.controlOnly ? securityFromEnv({ RSTAR_SECRETS_DIR: r.secrets.principals['control-plane'].dir }, 'control-plane').signer : null;
  const archiver = new Archiver(archBus, store, { logger: o.quiet, batchSize: o.batch, signer });
  const started: ChildProcess[] = [];
  try {
    await archiver.start();
    let published = 0;
    const share = Math.ceil(o.n / o.producers);
    const children = await Promise.all(
      Array.from({ length: o.producers }, (_, p) =>
        startProducer(
          {
            natsUrl: r.natsUrl,
            tag: o.tag,
            runId,
            from: p * share,
            to: Math.min(o.n, (p + 1) * share),
            secretsDir: r.secrets?.principals['tool-execution'].dir,
            unsigned: r.controlOnly,
          },
          (k) => (published += k),
          started,
        ),
      ),
    );
    // Process start-up and event building are not measured: the clock starts once every producer is ready.
    const t0 = performance.now();
    const publishing = Promise.all(children.map((c) => c.go()));
    let lastReport = t0;
    while (archiver.stats.archived < o.n) {
      if (performance.now() - lastReport > 2000) {
        o.progress(`${r.label}: published ${published}, archived ${archiver.stats.archived}`);
        lastReport = performance.now();
      }
      await new Promise((res) => setTimeout(res, 5));
    }
    const seconds = (performance.now() - t0) / 1000;
    await publishing;
    const stored = await store.count(runId);
    if (stored !== o.n) throw new Error(`${r.label}: the archive holds ${stored} events of the run, expected ${o.n}`);
    if (r.secrets && !r.controlOnly) {
      const sample = (await store.readRun(runId, { limit: 50 })).events;
      if (sample.some((e) => e.meta.signature?.keyId !== 'tool-execution')) throw new Error(`${r.label}: an archived event is not signed by tool-execution`);
    }
    const rate = o.n / seconds;
    o.progress(`${r.label}: ${Math.round(rate)} events/s (${seconds.toFixed(1)} s)`);
    return rate;
  } finally {
    // A failed round leaves no producer behind.
    for (const c of started) if (c.exitCode === null) c.kill();
    await archiver.stop();
    await archBus.close();
    await store.close();
  }
}


interface ProducerJob {
  natsUrl: string;
  tag: string;
  runId: string;
  from: number;
  to: number;
  /** Secured round: the tool-execution principal's secrets folder (nkey and signing key). */
  secretsDir?: string;
  /** Publish unsigned (the control-only round: bulk events were not signed). */
  unsigned?: boolean;
}

/** A producer process for events [from, to): ready once connected with its events built; publishes on `go()`. */
function startProducer(job: ProducerJob, onProgress: (k: number) => void, started: ChildProcess[]): Promise<{ go: () => Promise<void> }> {
  return new Promise((ready, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', __filename], {
      env: { ...process.env, RSTAR_BENCH_SECURED_PRODUCER: JSON.stringify(job) },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    started.push(child);
    const exited = new Promise<void>((res, rej) => child.on('exit', (code) => (code === 0 ? res() : rej(new Error(`producer exited with ${code}`)))));
    exited.catch(reject);
    child.stdout!.on('data', (d: Buffer) => {
      for (const line of d.toString().split('\n').filter(Boolean)) {
        if (line === 'ready') ready({ go: () => (child.stdin!.end('go\n'), exited) });
        else onProgress(Number(line));
      }
    });
  });
}

async function producerMain(job: ProducerJob): Promise<void> {
  // The benchmark went away before saying go: nothing to publish for.
  let told = false;
  process.stdin.once('end', () => told || process.exit(1));
  const events = makeEvents(job.runId, job.to, job.from, 'tool-execution');
  const bus = await connectWithRetry({
    servers: job.natsUrl,
    stream: job.tag.toUpperCase(),
    subjectPrefix: job.tag,
    name: `bench-producer-${job.from}`,
    logger: createLogger('bench-producer', { level: 'warn' }),
    ...(job.secretsDir ? securedBusOptionsFromEnv('tool-execution', { RSTAR_SECRETS_DIR: job.secretsDir }) : {}),
    ...(job.unsigned ? { signer: null } : {}),
  });
  process.stdout.write('ready\n');
  await new Promise<void>((r) => process.stdin.once('data', () => ((told = true), r())));
  for (let i = 0; i < events.length; i += 1000) {
    const chunk = events.slice(i, i + 1000);
    await bus.publish(chunk);
    process.stdout.write(`${chunk.length}\n`);
  }
  await bus.close();
}

/** Connect, trying three times: on a loaded machine a producer's first dial can time out. */
async function connectWithRetry(opts: Parameters<typeof JetStreamBus.connect>[0]): Promise<JetStreamBus> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await JetStreamBus.connect(opts);
    } catch (e) {
      if (attempt >= 3) throw e;
      process.stderr.write(`producer: connect attempt ${attempt} failed (${(e as Error).message}), retrying\n`);
    }
  }
}

if (process.env.RSTAR_BENCH_SECURED_PRODUCER) {
  producerMain(JSON.parse(process.env.RSTAR_BENCH_SECURED_PRODUCER) as ProducerJob).then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`producer: ${(e as Error).stack}\n`);
      process.exit(1);
    },
  );
}
