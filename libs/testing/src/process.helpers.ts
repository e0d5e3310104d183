import type { ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';

/**
 * The one set of port and child-process helpers the tests, test servers and benchmarks share (a helper
 * copied into a production lib or a bench is what test/architecture refuses).
 */

/** A free TCP port on loopback (bound, read, released; the caller binds it again shortly after). */
export async function freeLocalPort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

/** Whether something accepts TCP connections on `port` of `host` (default loopback) now. */
export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((res) => {
    const s = connect(port, host);
    s.once('connect', () => {
      s.destroy();
      res(true);
    });
    s.once('error', () => res(false));
  });
}

/** Whether `child` has not exited yet (neither an exit code nor a signal recorded). */
export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/**
 * Send `signal` to the process group of `child` (spawned with `detached: true`, so the group holds it and
 * anything it forked). Does nothing when it has already exited.
 */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || !isRunning(child)) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/** Resolves true once `child` has exited, false when it is still running after `timeoutMs`. */
export function waitExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (!isRunning(child)) return Promise.resolve(true);
  return new Promise((res) => {
    const t = setTimeout(() => res(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(t);
      res(true);
    });
  });
}

/** SIGTERM the group of `child`, SIGKILL it after `graceMs` (default 5 s); resolves when it is gone. Never throws. */
export async function stopGroup(child: ChildProcess, graceMs = 5_000): Promise<void> {
  signalGroup(child, 'SIGTERM');
  if (await waitExit(child, graceMs)) return;
  signalGroup(child, 'SIGKILL');
  await waitExit(child, 10_000);
}

/** Keep the last `maxChars` of `child`'s stdout and stderr (for error messages); returns a reader of it. */
export function keepOutput(child: ChildProcess, maxChars: number): () => string {
  let out = '';
  const keep = (b: Buffer) => (out = (out + b.toString('utf8')).slice(-maxChars));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => out;
}
