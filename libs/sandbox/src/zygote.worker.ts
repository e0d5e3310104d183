import { spawn, type ChildProcess } from 'node:child_process';
import { CgroupManager, type CgroupLeaf, type WorkerCgroups } from './cgroup.manager';
import { ZYGOTE_PACKAGE } from './python.resolver';
import { SandboxError, WorkerStartError } from './sandbox.errors';
import { encodeRequest, FrameReader, type ZygoteFrame } from './zygote.frames';

/** How to start one zygote. */
export interface ZygoteSpec {
  index: number;
  python: string;
  pythonRoots: string[];
  /** Host directory holding the `rstar_zygote` package. */
  zygoteRoot: string;
  bwrap: boolean;
  cgroups: WorkerCgroups | null;
  /** Unprivileged uid the call children switch to (null: no privilege to drop). */
  uid: number | null;
  /** One uid per session slot (empty: sessions use `uid`). */
  sessionUids: number[];
  sessionCap: number;
  sessionIdleS: number;
  pidsMax: number;
  /** Submodules this zygote imports before forking (e.g. `scipy.stats`); empty = the base stack only. */
  warmModules: string[];
  env: (workRoot: string) => Record<string, string>;
  hostWorkRoot: string;
}

/** The zygote answered nothing in time: the worker was killed and must be replaced. */
export class WorkerBackstopError extends SandboxError {
  constructor(message: string) {
    super('worker_backstop', message);
  }
}
/** The zygote died while a request was in flight. */
export class WorkerDiedError extends SandboxError {
  constructor(message: string) {
    super('worker_died', message);
  }
}

/**
 * One zygote process (`python -m rstar_zygote`, libs/sandbox/python/rstar_zygote), optionally inside bubblewrap, placed in its
 * cgroup leaf before it starts (a shell writes its own pid to `cgroup.procs`, then `exec`s, so nothing
 * it forks escapes the leaf). One request at a time, framed by zygote.frames.ts.
 */
export class ZygoteWorker {
  private proc: ChildProcess | null = null;
  private pending: { resolve: (v: ZygoteFrame) => void; reject: (e: Error) => void; timer: NodeJS.Timeout } | null =
    null;
  private stderrTail = '';
  private exited = false;
  info: Record<string, unknown> = {};
  /** Called once when the process exits unexpectedly (not by `kill()`). */
  onExit: (() => void) | null = null;
  private killing = false;

  constructor(readonly spec: ZygoteSpec) {}

  get alive(): boolean {
    return !!this.proc && !this.exited;
  }

  get busy(): boolean {
    return this.pending !== null;
  }

  /** Spawn and wait for the zygote's `ready` line. @throws WorkerStartError */
  async start(timeoutMs = 120_000): Promise<void> {
    const s = this.spec;
    const workRoot = s.bwrap ? '/run/rstar' : s.hostWorkRoot;
    const env = s.env(workRoot);
    let argv: string[];
    let call: CgroupLeaf | null = s.cgroups?.call ?? null;
    let sessions: CgroupLeaf[] = s.cgroups?.sessions ?? [];
    const cwd = s.zygoteRoot;
    const cfg = (c: CgroupLeaf | null, ss: CgroupLeaf[]) =>
      JSON.stringify({
        workRoot,
        uid: s.uid,
        sessionUids: s.sessionUids,
        cgCall: c,
        cgSessions: ss,
        sessionCap: s.sessionCap,
        sessionIdleS: s.sessionIdleS,
        wipeDirs: s.bwrap ? ['/tmp', '/var/tmp', '/dev/shm'] : [],
        pidsMax: s.pidsMax,
        warmModules: s.warmModules,
      });
    if (s.bwrap) {
      const { bwrapArgs } = await import('./bwrap.args');
      const b = bwrapArgs({ pythonRoots: s.pythonRoots, zygoteRoot: s.zygoteRoot, env, call, sessions });
      call = b.inner.call;
      sessions = b.inner.sessions;
      argv = ['bwrap', ...b.args, '--setenv', 'RSTAR_ZYGOTE_CONFIG', cfg(call, sessions), s.python, '-m', ZYGOTE_PACKAGE];
    } else {
      argv = [s.python, '-m', ZYGOTE_PACKAGE];
      env.RSTAR_ZYGOTE_CONFIG = cfg(call, sessions);
    }
    const procs = s.cgroups ? CgroupManager.procsFiles(s.cgroups.zygote) : [];
    const proc = spawn(
      '/bin/sh',
      ['-c', 'for f in $RSTAR_CG_PROCS; do echo $$ > "$f" || exit 97; done; exec "$@"', 'rstar-zygote', ...argv],
      { env: { ...env, RSTAR_CG_PROCS: procs.join(' ') }, cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: true },
    );
    this.proc = proc;
    proc.stdin!.on('error', () => undefined);
    proc.stderr!.on('data', (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString('utf8')).slice(-4000);
    });
    let ready: ((v: Record<string, unknown>) => void) | null = null;
    let failed: ((e: Error) => void) | null = null;
    const frames = new FrameReader((frame) => {
      if (ready) {
        const r = ready;
        ready = null;
        r(frame.msg);
        return;
      }
      const p = this.pending;
      if (p) {
        this.pending = null;
        clearTimeout(p.timer);
        p.resolve(frame);
      }
    });
    proc.stdout!.on('data', (d: Buffer) => {
      try {
        frames.push(d);
      } catch (e) {
        // A malformed frame: the stream cannot be trusted past it. End the zygote as a crash (not
        // `kill()`, which marks an intended stop), so the pool replaces it and retries the call.
        this.stderrTail += `\nrstar-sandbox: ${(e as Error).message}`;
        try {
          process.kill(-proc.pid!, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    });
    proc.on('exit', (code, signal) => {
      this.exited = true;
      const why = `zygote ${s.index} exited (code ${code}, signal ${signal}); stderr: ${this.stderrTail.slice(-800)}`;
      if (failed) failed(new WorkerStartError(why));
      const p = this.pending;
      this.pending = null;
      if (p) {
        clearTimeout(p.timer);
        p.reject(new WorkerDiedError(why));
      }
      if (!this.killing) this.onExit?.();
    });
    const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
      ready = resolve;
      failed = reject;
      setTimeout(() => reject(new WorkerStartError(`zygote ${s.index} not ready after ${timeoutMs} ms`)), timeoutMs).unref();
    }).catch((e: Error) => {
      this.kill();
      throw e;
    });
    failed = null;
    this.info = info;
  }

  /**
   * Send one request (`code` and `input` travel as raw bytes after its header); resolves with the
   * zygote's response line and stream bytes. `backstopMs` bounds the wait: past it the whole worker is
   * killed (the zygote enforces the per-call limit itself; this catches a stuck zygote).
   * @throws WorkerBackstopError | WorkerDiedError
   */
  request(req: Record<string, unknown>, backstopMs: number, code?: string, input?: string): Promise<ZygoteFrame> {
    if (!this.alive) return Promise.reject(new WorkerDiedError(`zygote ${this.spec.index} is not running`));
    if (this.pending) return Promise.reject(new Error(`zygote ${this.spec.index} is busy (pool bug)`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = null;
        this.kill();
        reject(new WorkerBackstopError(`zygote ${this.spec.index} did not answer within ${backstopMs} ms; restarted`));
      }, backstopMs);
      this.pending = { resolve, reject, timer };
      this.proc!.stdin!.write(encodeRequest(req, code, input));
    });
  }

  /** Kill the zygote's whole process group and everything left in its cgroup leaves. */
  kill(): void {
    this.killing = true;
    const pid = this.proc?.pid;
    if (pid && !this.exited) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    const cg = this.spec.cgroups;
    if (cg)
      for (const leaf of [cg.call, ...cg.sessions, cg.zygote])
        for (const p of CgroupManager.pids(leaf)) {
          try {
            process.kill(p, 'SIGKILL');
          } catch {
            /* gone */
          }
        }
  }

  /** Close stdin (the zygote ends its sessions and exits), then kill after `graceMs`. */
  async stop(graceMs = 2_000): Promise<void> {
    if (!this.proc || this.exited) {
      this.kill();
      return;
    }
    this.killing = true;
    const done = new Promise<void>((r) => this.proc!.once('exit', () => r()));
    this.proc.stdin!.end();
    const t = setTimeout(() => this.kill(), graceMs);
    await done;
    clearTimeout(t);
    this.kill();
  }

  /** Wait until the process has exited (after `kill`). */
  async waitExit(): Promise<void> {
    if (!this.proc || this.exited) return;
    await new Promise<void>((r) => this.proc!.once('exit', () => r()));
  }
}
