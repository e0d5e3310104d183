import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freeLocalPort, isRunning, portOpen, stopGroup } from './process.helpers';
import { until } from './until';

/** Repository root (infra/local lives there). */
const ROOT = resolve(__dirname, '../../..');
/** Where infra/local/install-*.sh put Jaeger and Kafka (RSTAR_TOOLS_DIR, default .rstar/tools). */
export const TOOLS_DIR = process.env.RSTAR_TOOLS_DIR ?? join(ROOT, '.rstar', 'tools');

/** Why a test needing Jaeger cannot run here, or null when the binary is installed. */
export function jaegerMissing(): string | null {
  return existsSync(join(TOOLS_DIR, 'jaeger', 'bin', 'jaeger')) ? null : `Jaeger is not installed in ${TOOLS_DIR}: run bash infra/local/install-jaeger.sh`;
}

/** Why a test needing Kafka cannot run here, or null when the broker's jars are installed. */
export function kafkaMissing(): string | null {
  return existsSync(join(TOOLS_DIR, 'kafka', 'libs')) ? null : `Kafka is not installed in ${TOOLS_DIR}: run bash infra/local/install-kafka.sh`;
}

/** One infra/local runner script as a child process in its own process group, its output kept for errors. */
class ScriptProcess {
  private child: ChildProcess | null = null;
  out = '';

  constructor(
    readonly name: string,
    private readonly script: string,
    private readonly env: Record<string, string>,
  ) {}

  get running(): boolean {
    return !!this.child && isRunning(this.child);
  }

  async start(ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const child = spawn('bash', [join(ROOT, 'infra', 'local', this.script)], { env: { ...process.env, ...this.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child = child;
    const keep = (b: Buffer) => (this.out = (this.out + b.toString()).slice(-16_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`${this.name} exited (${child.exitCode}) during startup:\n${this.out}`);
      return ready();
    }, `${this.name} to start`, { timeoutMs, everyMs: 250 });
  }

  /** SIGTERM the group, SIGKILL after `graceMs`; resolves when it is gone. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.child && this.running) await stopGroup(this.child, graceMs);
  }
}

/** A private Jaeger all-in-one (infra/local/jaeger.sh): OTLP/HTTP in, query API out, spans in memory. */
export interface JaegerServer {
  /** `http://127.0.0.1:<port>`: set as OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpUrl: string;
  /** `http://127.0.0.1:<port>`: the query API (`/api/traces/<id>`, `/api/services`). */
  queryUrl: string;
  stop(): Promise<void>;
}

/** Start Jaeger on free loopback ports. @throws when it is not installed (see {@link jaegerMissing}) or does not answer within 60 s. */
export async function startJaeger(): Promise<JaegerServer> {
  const missing = jaegerMissing();
  if (missing) throw new Error(missing);
  const [otlp, query, grpc, health] = [await freeLocalPort(), await freeLocalPort(), await freeLocalPort(), await freeLocalPort()];
  const p = new ScriptProcess('jaeger', 'jaeger.sh', {
    RSTAR_JAEGER_OTLP_PORT: String(otlp), RSTAR_JAEGER_QUERY_PORT: String(query), RSTAR_JAEGER_QUERY_GRPC_PORT: String(grpc), RSTAR_JAEGER_HEALTH_PORT: String(health),
  });
  await p.start(async () => {
    try {
      return (await fetch(`http://127.0.0.1:${query}/api/services`, { signal: AbortSignal.timeout(1_000) })).ok && (await portOpen(otlp));
    } catch {
      return false;
    }
  }, 60_000);
  return { otlpUrl: `http://127.0.0.1:${otlp}`, queryUrl: `http://127.0.0.1:${query}`, stop: () => p.stop() };
}

/** A private single-node Kafka broker (KRaft, infra/local/kafka.sh) on its own ports and data directory. */
export interface KafkaBroker {
  /** `127.0.0.1:<port>`. */
  broker: string;
  /** Stop it (SIGTERM: a clean shutdown) keeping its data. */
  stop(): Promise<void>;
  /** Start it again on the same port and data. */
  start(): Promise<void>;
  /** Stop it and delete its data. */
  destroy(): Promise<void>;
}

/** Start a broker on free loopback ports. @throws when Kafka is not installed (see {@link kafkaMissing}) or does not listen within 120 s. */
export async function startKafkaBroker(): Promise<KafkaBroker> {
  const missing = kafkaMissing();
  if (missing) throw new Error(missing);
  const [port, cport] = [await freeLocalPort(), await freeLocalPort()];
  const dir = mkdtempSync(join(tmpdir(), 'rstar-kafka-'));
  const env = { RSTAR_KAFKA_PORT: String(port), RSTAR_KAFKA_CONTROLLER_PORT: String(cport), RSTAR_KAFKA_DATA_DIR: dir };
  let p = new ScriptProcess('kafka', 'kafka.sh', env);
  const start = async () => {
    p = new ScriptProcess('kafka', 'kafka.sh', env);
    await p.start(() => portOpen(port), 120_000);
  };
  await start();
  return {
    broker: `127.0.0.1:${port}`,
    stop: () => p.stop(30_000),
    start,
    destroy: async () => {
      await p.stop(30_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
