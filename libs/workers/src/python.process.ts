import { spawn, type ChildProcess } from 'node:child_process';
import { WorkerProcessError } from './workers.errors';

/** Options of {@link startPythonProcess}. */
export interface PythonProcessOptions {
  /** Name for errors, e.g. `trainer worker`. */
  name: string;
  python: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** How long to wait for the `{"event":"listening"}` line (ms; default 180 000: importing torch on a loaded 2-core machine). */
  startTimeoutMs?: number;
  /** Called with every output line (stdout and stderr). */
  onLine?: (line: string) => void;
}

/** A started worker process: its URL from the `listening` line, and how to stop or kill it. */
export interface PythonProcess {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** The `listening` line's fields (device, worldSize, kvCapacityTokens, ...). */
  readonly listening: Record<string, unknown>;
  /** The last 64 KiB of its stdout and stderr. */
  output(): string;
  /** Whether it is still running. */
  running(): boolean;
  /** SIGTERM the process group, then SIGKILL after `graceMs` (default 10 000). Never throws. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL the process group (the crash case) and wait until it is gone. */
  kill(): Promise<void>;
  /** Resolves with the exit code (or signal name) when it exits. */
  exited: Promise<number | string>;
}

function signalGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, sig);
  } catch {
    // already gone
  }
}

/** The worker's `{"error": {code, message, field}}` line, when it printed one. */
function workerError(out: string): { code: string; message: string; field: string | null } | null {
  for (const line of out.split('\n').reverse()) {
    if (!line.startsWith('{"error"')) continue;
    try {
      const e = (JSON.parse(line) as { error?: { code?: string; message?: string; field?: string } }).error;
      if (e?.code) return { code: e.code, message: e.message ?? e.code, field: e.field ?? null };
    } catch {
      // not the error line
    }
  }
  return null;
}

/**
 * Spawn a workers/ Python server (`python -m rstar_trainer serve ...` or `python -m rstar_trainer.engine
 * serve ...`) in its own process group and wait for the JSON line `{"event":"listening","url",...}` it
 * prints when ready. @throws WorkerProcessError when it exits first (with the worker's own error code,
 * e.g. `model_dir_invalid`, `tokenizer_missing`) or does not listen within `startTimeoutMs`.
 */
export async function startPythonProcess(o: PythonProcessOptions): Promise<PythonProcess> {
  const child = spawn(o.python, o.args, {
    cwd: o.cwd,
    env: { ...process.env, PYTHONUNBUFFERED: '1', TOKENIZERS_PARALLELISM: 'false', ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let partial = '';
  let listening: Record<string, unknown> | null = null;
  let onListening: (() => void) | null = null;
  const exited = new Promise<number | string>((res) => child.once('exit', (code, sig) => res(code ?? sig ?? 'unknown')));
  const feed = (b: Buffer) => {
    const s = b.toString('utf8');
    out = (out + s).slice(-65_536);
    partial += s;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      o.onLine?.(line);
      if (listening || !line.startsWith('{"event"')) continue;
      try {
        const ev = JSON.parse(line) as Record<string, unknown>;
        if (ev.event === 'listening') {
          listening = ev;
          onListening?.();
        }
      } catch {
        // another line that looks like JSON; keep reading
      }
    }
  };
  child.stdout!.on('data', feed);
  child.stderr!.on('data', feed);
  const timeoutMs = o.startTimeoutMs ?? 180_000;
  const started = await new Promise<'listening' | 'exited' | 'timeout'>((res) => {
    const t = setTimeout(() => res('timeout'), timeoutMs);
    onListening = () => {
      clearTimeout(t);
      res('listening');
    };
    void exited.then(() => {
      clearTimeout(t);
      res('exited');
    });
  });
  if (started !== 'listening' || !listening) {
    signalGroup(child, 'SIGKILL');
    const code = await exited;
    const e = workerError(out);
    if (e) throw new WorkerProcessError(e.code, `${o.name}: ${e.message}`, e.field, typeof code === 'number' ? code : null);
    const why = started === 'timeout' ? `did not print its listening line within ${timeoutMs} ms` : `exited (${code}) before listening`;
    throw new WorkerProcessError('worker_exited', `${o.name} ${why}; output:\n${out.slice(-3000)}`, null, typeof code === 'number' ? code : null);
  }
  const info: Record<string, unknown> = listening;
  const wait = (ms: number) => Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
  return {
    url: String(info.url),
    port: Number(info.port),
    pid: child.pid!,
    listening: info,
    output: () => out,
    running: () => child.exitCode === null && child.signalCode === null,
    exited,
    stop: async (graceMs = 10_000) => {
      signalGroup(child, 'SIGTERM');
      if (!(await wait(graceMs))) {
        signalGroup(child, 'SIGKILL');
        await wait(10_000);
      }
    },
    kill: async () => {
      signalGroup(child, 'SIGKILL');
      await wait(10_000);
    },
  };
}
