import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { freeLocalPort, portOpen, signalGroup, stopGroup, until, waitExit } from '@rstar/testing';

/** Repository root (the services' `main.ts` paths are relative to it). */
export const REPO_ROOT = resolve(__dirname, '../..');

/** A child process that did not come up, or died; the message carries the tail of its output. */
export class ServiceProcessError extends Error {
  readonly code = 'service_process_failed';
  constructor(readonly service: string, message: string) {
    super(`${service}: ${message}`);
    this.name = 'ServiceProcessError';
  }
}

/** Options of {@link ServiceProcess}. */
export interface ServiceProcessOptions {
  /** Name used in errors, e.g. `tool-execution`. */
  name: string;
  /** Entry file relative to the repo root, e.g. `services/tool-execution/src/main.ts`. */
  entry: string;
  /** Port the service listens on (passed as env `PORT`). */
  port: number;
  /** Extra environment (merged over this process's environment). */
  env: Record<string, string>;
  /** Startup deadline in ms (default 90 000: swc + NestJS on a busy 2-core machine). */
  startTimeoutMs?: number;
  /** What `start()` waits for: `ready` (default: `/health/ready` answers 200) or `live` (the process listens). */
  waitFor?: 'ready' | 'live';
}

/**
 * One rstar service run as a real child process (`node -r @swc-node/register <entry>`: swc keeps the decorator metadata Nest injects by, which tsx drops; one process, so SIGKILL hits
 * the service itself and not a wrapper), in its own process group. `start()` resolves when `GET
 * /health/ready` answers 200: the service is connected and its workers have subscribed their handlers. `kill()` is a SIGKILL of the group (the chaos case); `stop()` is SIGTERM, then SIGKILL.
 * The last 64 KiB of output is kept for error messages.
 */
export class ServiceProcess {
  private child: ChildProcess | null = null;
  private out = '';
  /** How many times the service was started. */
  starts = 0;

  constructor(readonly opts: ServiceProcessOptions) {}

  /** Exit code of the last child, once it has exited (null while it runs or when a signal ended it). */
  get exitCode(): number | null {
    return this.child?.exitCode ?? null;
  }

  /** The tail of the current (or last) child's stdout+stderr. */
  get output(): string {
    return this.out;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Spawn and wait for `/health`. @throws ServiceProcessError when it exits or does not answer in time. */
  async start(): Promise<void> {
    if (this.running) throw new ServiceProcessError(this.opts.name, 'start() called while it is running');
    this.out = '';
    const child = spawn(process.execPath, ['-r', '@swc-node/register', this.opts.entry], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...this.opts.env, PORT: String(this.opts.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    this.starts++;
    const keep = (b: Buffer) => {
      this.out = (this.out + b.toString('utf8')).slice(-65_536);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const url = `http://127.0.0.1:${this.opts.port}/health/${this.opts.waitFor ?? 'ready'}`;
    await until(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new ServiceProcessError(this.opts.name, `exited (${child.exitCode ?? child.signalCode}) during startup:\n${this.out.slice(-4000)}`);
        }
        try {
          const r = await fetch(url, { signal: AbortSignal.timeout(2_000) });
          return r.ok;
        } catch {
          return false;
        }
      },
      `${this.opts.name} to answer ${url}`,
      { timeoutMs: this.opts.startTimeoutMs ?? 90_000, everyMs: 250 },
    ).catch((e: Error) => {
      if (e instanceof ServiceProcessError) throw e;
      throw new ServiceProcessError(this.opts.name, `${e.message}; output:\n${this.out.slice(-4000)}`);
    });
  }

  /**
   * Start a process that is expected to refuse to start (a bad setting, a taken port): resolves with its
   * exit code once it exits. @throws ServiceProcessError when it is still running after `timeoutMs`.
   */
  async runUntilExit(timeoutMs = 90_000): Promise<number | null> {
    this.out = '';
    const child = spawn(process.execPath, ['-r', '@swc-node/register', this.opts.entry], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...this.opts.env, PORT: String(this.opts.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    this.starts++;
    const keep = (b: Buffer) => {
      this.out = (this.out + b.toString('utf8')).slice(-65_536);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    if (!(await waitExit(child, timeoutMs))) {
      signalGroup(child, 'SIGKILL');
      throw new ServiceProcessError(this.opts.name, `still running after ${timeoutMs} ms:\n${this.out.slice(-4000)}`);
    }
    return child.exitCode;
  }

  /** SIGKILL the service (no shutdown hooks run) and wait until it is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    signalGroup(child, 'SIGKILL');
    await waitExit(child, 10_000);
  }

  /** Graceful stop (SIGTERM, then SIGKILL after `graceMs`). Never throws. */
  async stop(graceMs = 5_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    await stopGroup(child, graceMs);
  }
}

/** A private JetStream-enabled nats-server (own port, own store dir), so default stream/subject names cannot collide with other tests. */
export interface PrivateNats {
  url: string;
  stop(): Promise<void>;
}

/**
 * Start `nats-server -js` on `port` (default: a free loopback port) with a temporary store directory. Services whose
 * `main.ts` does not read a stream/subject-prefix setting use the defaults (`RSTAR`, `rstar.>`); a server
 * of their own isolates them from every other test. @throws Error when it does not listen within 10 s.
 */
export async function startPrivateNats(port?: number): Promise<PrivateNats> {
  port ??= await freeLocalPort();
  const dir = mkdtempSync(join(tmpdir(), 'rstar-nats-'));
  const child = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-8000)));
  child.stderr!.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-8000)));
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`nats-server exited (${child.exitCode}):\n${out}`);
    return portOpen(port);
  }, `nats-server on port ${port}`, { timeoutMs: 10_000, everyMs: 100 });
  return {
    url: `nats://127.0.0.1:${port}`,
    stop: async () => {
      await stopGroup(child, 5_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A Postgres database of its own (created on the test server, dropped by `drop`). */
export interface PrivateDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * Create database `name` on the server of `baseUrl` (whose role must be allowed to create databases) and
 * return its URL. Services that always use schema `rstar` are isolated by the database instead.
 */
export async function createPrivateDatabase(baseUrl: string, name: string): Promise<PrivateDatabase> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`database name must be lower-case letters, digits and "_", got "${name}"`);
  const admin = async (sql: string) => {
    const c = new Client({ connectionString: baseUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE "${name}"`);
  const u = new URL(baseUrl);
  u.pathname = `/${name}`;
  return { url: u.toString(), drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}
