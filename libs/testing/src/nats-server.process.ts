import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLocalPort, isRunning, keepOutput, portOpen, signalGroup, stopGroup } from './process.helpers';

/** A nats-server started by {@link startNatsServer}. */
export interface NatsServerProcess {
  url: string;
  port: number;
  /** Everything the server logged so far (permission violations among it). */
  log(): string;
  stop(): Promise<void>;
}

/** The installed nats-server's version (`2.9.10`), or null when there is none on PATH. */
export function natsServerVersion(bin = 'nats-server'): string | null {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  return /v?(\d+\.\d+\.\d+)/.exec(r.stdout + r.stderr)?.[1] ?? null;
}

/**
 * Why a test needing nats-server cannot run here, or null when one is on PATH; for
 * `describe.skipIf(skipUnlessCi(natsServerMissing()))`, so CI fails instead of skipping.
 */
export function natsServerMissing(bin = 'nats-server'): string | null {
  return natsServerVersion(bin) ? null : `${bin} is not on PATH: run bash infra/local/install.sh as root (it installs the Debian package nats-server)`;
}

/**
 * Start a private JetStream nats-server on loopback with `config` appended to its base settings (port,
 * store folder, 8 MB payloads, JetStream): a secured configuration from {@link renderNatsAuthConfig}, or
 * nothing for an open one. Used by the tests and `pnpm bench events` to compare open and secured servers
 * side by side. @throws Error when it does not listen within `startTimeoutMs` (with its output).
 */
export async function startNatsServer(o: { config?: string; port?: number; bin?: string; startTimeoutMs?: number } = {}): Promise<NatsServerProcess> {
  const port = o.port ?? (await freeLocalPort());
  const dir = mkdtempSync(join(tmpdir(), 'rstar-nats-'));
  const confPath = join(dir, 'nats.conf');
  writeFileSync(
    confPath,
    [`listen: "127.0.0.1:${port}"`, 'max_payload: 8MB', `jetstream { store_dir: "${join(dir, 'js')}", max_memory_store: 256MB, max_file_store: 4GB }`, o.config ?? ''].join('\n'),
    { mode: 0o600 },
  );
  const child: ChildProcess = spawn(o.bin ?? 'nats-server', ['-c', confPath], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const out = keepOutput(child, 262_144);
  const spawnError = new Promise<never>((_, rej) => child.once('error', (e) => rej(new Error(`nats-server could not start: ${e.message}`))));
  const t0 = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nats-server exited (${child.exitCode}):\n${out()}`);
    if (await Promise.race([portOpen(port), spawnError])) break;
    if (Date.now() - t0 > (o.startTimeoutMs ?? 15_000)) {
      signalGroup(child, 'SIGKILL');
      throw new Error(`nats-server did not listen on ${port} within ${o.startTimeoutMs ?? 15_000} ms:\n${out()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    log: out,
    stop: async () => {
      if (isRunning(child)) await stopGroup(child, 5_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
