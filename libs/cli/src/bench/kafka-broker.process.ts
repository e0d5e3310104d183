import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** Repository root (infra/local lives there). */
const ROOT = resolve(__dirname, '../../../..');
const TOOLS = process.env.RSTAR_TOOLS_DIR ?? join(ROOT, '.rstar', 'tools');

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

const portOpen = (port: number) =>
  new Promise<boolean>((res) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), res(true)));
    s.once('error', () => res(false));
  });

/**
 * A private single-node Kafka broker for a benchmark (infra/local/kafka.sh on free ports and a temporary
 * directory). @throws Error naming the install script when the jars are not installed.
 */
export async function startBenchKafka(): Promise<{ broker: string; stop(): Promise<void> }> {
  if (!existsSync(join(TOOLS, 'kafka', 'libs'))) throw new Error(`Kafka is not installed in ${TOOLS}: run bash infra/local/install-kafka.sh (or set RSTAR_KAFKA_BROKERS)`);
  const [port, cport] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'rstar-bench-kafka-'));
  const child = spawn('bash', [join(ROOT, 'infra/local/kafka.sh')], {
    env: { ...process.env, RSTAR_KAFKA_PORT: String(port), RSTAR_KAFKA_CONTROLLER_PORT: String(cport), RSTAR_KAFKA_DATA_DIR: dir },
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: true,
  });
  const t0 = Date.now();
  while (!(await portOpen(port))) {
    if (child.exitCode !== null) throw new Error(`kafka.sh exited with ${child.exitCode}`);
    if (Date.now() - t0 > 120_000) throw new Error('the Kafka broker did not listen within 120 s');
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    broker: `127.0.0.1:${port}`,
    stop: async () => {
      const gone = new Promise((r) => child.once('exit', r));
      try {
        process.kill(-child.pid!, 'SIGTERM');
        await gone;
      } catch {
        // already gone
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
