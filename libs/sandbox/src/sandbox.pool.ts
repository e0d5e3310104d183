import { cpus, tmpdir } from 'node:os';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bwrapUsable, sandboxEnv } from './bwrap.args';
import { CgroupManager, pidAlive, type WorkerCgroups } from './cgroup.manager';
import { DEFAULT_LIMITS, DEFAULT_MAXIMA, resolveRequest, type ResolvedRequest } from './exec-request.validator';
import { inspectPython, resolvePython, ZYGOTE_ROOT } from './python.resolver';
import { INVALID_REQUEST_PREFIX, InvalidRequestError, IsolationUnavailableError, PoolNotRunningError } from './sandbox.errors';
import type { ExecLimits, ExecRequest, ExecResult, ExecStatus, SandboxHealth, SandboxPoolOptions } from './sandbox.types';
import { execResultOf } from './zygote.response';
import { WorkerBackstopError, ZygoteWorker } from './zygote.worker';

let poolSeq = 0;
const CLK_TCK = 100; // USER_HZ: what /proc/<pid>/stat counts in on every Linux ABI

/** utime + stime (+ cutime + cstime: waited-for children) of a process, in ms; 0 when it is gone. */
function procCpuMs(pid: number, withChildren: boolean): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const v = f.slice(f.lastIndexOf(')') + 2).split(' ').map(Number);
    // Fields after the command: state=0 ... utime=11 stime=12 cutime=13 cstime=14.
    const ticks = v[11]! + v[12]! + (withChildren ? v[13]! + v[14]! : 0);
    return (ticks * 1000) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** First uid of the sandbox's calls; each worker takes a block of its own (see {@link callUids}). */
const CALL_UID_BASE = 61000;

/**
 * The unprivileged uids worker `i` runs programs as: one for its stateless calls and one per session
 * slot, none shared with another worker or slot, so that no program (nor a thread a session cell left
 * running) can signal, read or write what another call or session owns. Null and [] when this process
 * is not root (nothing to drop from).
 */
function callUids(i: number, sessionCap: number): { uid: number | null; sessionUids: number[] } {
  if (process.getuid?.() !== 0) return { uid: null, sessionUids: [] };
  const base = CALL_UID_BASE + i * (sessionCap + 1);
  return { uid: base, sessionUids: Array.from({ length: sessionCap }, (_, k) => base + 1 + k) };
}

/**
 * scipy submodules the scipy zygotes import before forking: the ones the code blocks of
 * ../shared/trajectories use (`scipySubmoduleUsage`: stats in 3 blocks, integrate in 1; no other).
 * Importing scipy.stats also loads linalg, optimize, special, interpolate, sparse, spatial, fft and
 * ndimage, so those are warm there too. matplotlib.pyplot is warmed with them (see USES_SCIPY).
 */
export const SCIPY_WARM_MODULES: readonly string[] = ['scipy.stats', 'scipy.integrate', 'matplotlib.pyplot'];
/**
 * A program that mentions scipy or matplotlib runs on a scipy zygote (where one exists). matplotlib is
 * warmed there too: a cold import costs ~1.3 s of CPU, and without a writable config directory it rebuilt
 * its font cache and printed a warning to stderr on every call (a difference from `python3 prog.py`).
 */
const USES_SCIPY = /\b(scipy|matplotlib)\b/;

interface Job {
  /** `end_session` jobs carry only `req.session`. */
  op?: 'exec' | 'end_session';
  req: ResolvedRequest;
  resolve: (r: ExecResult) => void;
  /** Worker index this job must run on (session affinity), or -1 for any. */
  worker: number;
  /** The program uses scipy: it waits for a scipy zygote rather than import scipy's submodules cold. */
  scipy?: boolean;
  /** Already re-queued once after its zygote died under it. */
  retried?: boolean;
}

/** A result the pool produces itself (never ran). */
export function poolResult(status: ExecStatus, stderr: string): ExecResult {
  return { status, stdout: '', stderr, exitCode: null, signal: null, wallMs: 0, cpuMs: 0, truncated: false };
}

/**
 * A pool of warm Python zygotes (docs/design/architecture.md §5, issue 3): each imports numpy/sympy/scipy once and
 * forks one child per call inside bubblewrap, with per-call cgroup limits, wall-clock kill of the
 * whole call from outside, output caps while reading, and stateful sessions pinned to one worker.
 *
 * `execute()` never throws for a bad program or a bad request: everything is an {@link ExecResult}
 * (`invalid_request` names the invalid field; `overloaded` when `queueLimit` requests already wait).
 *
 * @example
 * const pool = new SandboxPool(); await pool.start();
 * const r = await pool.execute({ code: 'import sympy as s; s.sqrt(8)' }); // r.stdout === '2*sqrt(2)\n'
 * await pool.close();
 */
export class SandboxPool {
  private readonly opts: SandboxPoolOptions;
  private readonly defaults: ExecLimits;
  private readonly maxima: ExecLimits & { inputBytes: number; codeBytes: number };
  private readonly queueLimit: number;
  private readonly sessionCap: number;
  private readonly sessionIdleS: number;
  private readonly pidsMax: number;
  /** All zygotes: `workers` lean ones, then the scipy ones. */
  private readonly nWorkers: number;
  /** Lean zygotes (the base stack only): every program that does not mention scipy runs on one. */
  private readonly nLean: number;
  /** scipy zygotes, after the lean ones. */
  private readonly nScipy: number;
  private workers: ZygoteWorker[] = [];
  /** Where the next dispatch starts looking for an idle worker. */
  private nextWorker = 0;
  private cgroupsOf: (WorkerCgroups | null)[] = [];
  private cg: CgroupManager | null = null;
  private readonly queue: Job[] = [];
  private readonly sessionPin = new Map<string, { worker: number; last: number; generation: number }>();
  private readonly generation: number[] = [];
  private readonly restarting = new Set<number>();
  private restarts = 0;
  private state: 'new' | 'starting' | 'running' | 'closed' = 'new';
  private isolation: 'bwrap' | 'none' = 'none';
  private readonly warnings: string[] = [];
  private python = '';
  private pythonRoots: string[] = [];
  private hostWorkRoot = '';
  private readonly tag = `rstar-sbx-${process.pid}-${++poolSeq}`;

  constructor(opts: SandboxPoolOptions = {}) {
    this.opts = opts;
    this.defaults = { ...DEFAULT_LIMITS, ...opts.defaults };
    this.maxima = { ...DEFAULT_MAXIMA, ...opts.maxima };
    this.queueLimit = opts.queueLimit ?? 4096;
    this.sessionCap = opts.sessionsPerWorker ?? 8;
    this.sessionIdleS = opts.sessionIdleS ?? 300;
    this.pidsMax = opts.pidsMax ?? 256;
    // Two zygotes per core: a zygote is idle while its call's child runs and while it waits for the
    // next request, so one per core leaves the cores idle between calls (measured: 4 zygotes on 2
    // cores give ~1.3x the print(1) throughput of 2).
    this.nLean = Math.max(1, opts.workers ?? Math.max(4, 2 * cpus().length));
    // scipy zygotes (see SCIPY_WARM_MODULES), on top of the lean ones: warming scipy.stats in a zygote
    // doubles its heap (62 -> 130 MB RSS) and adds ~580 mappings that each of its forks copies (+~3 CPU
    // ms per call, measured), so only programs that use scipy run there (and save its 1-2 s import);
    // every other program keeps the lean zygotes' cost. An idle zygote costs memory, no CPU.
    this.nScipy = opts.scipyWorkers ?? 1;
    this.nWorkers = this.nLean + this.nScipy;
    for (const [k, v] of Object.entries({ workers: this.nLean, queueLimit: this.queueLimit, pidsMax: this.pidsMax }))
      if (!Number.isInteger(v) || v < 1) throw new InvalidRequestError(k, `must be a positive integer, got ${v}`);
    if (!Number.isInteger(this.nScipy) || this.nScipy < 0)
      throw new InvalidRequestError('scipyWorkers', `must be an integer >= 0, got ${this.nScipy}`);
  }

  /**
   * Detect isolation (bubblewrap, cgroups), start every zygote and wait until all are warm.
   * @throws IsolationUnavailableError when `isolation: 'bwrap'` is required but unusable; WorkerStartError.
   */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new PoolNotRunningError(`start() called on a pool that is ${this.state}`);
    this.state = 'starting';
    const warn = (m: string) => {
      this.warnings.push(m);
      (this.opts.onWarning ?? ((x: string) => console.warn(`[sandbox] WARNING: ${x}`)))(m);
    };
    this.python = resolvePython(this.opts.python);
    const install = inspectPython(this.python);
    this.pythonRoots = install.roots;
    const mode = this.opts.isolation ?? 'auto';
    if (mode !== 'none') {
      const b = process.platform === 'linux' ? bwrapUsable() : { ok: false, reason: 'bubblewrap needs Linux' };
      if (b.ok) this.isolation = 'bwrap';
      else if (mode === 'bwrap') throw new IsolationUnavailableError(`isolation 'bwrap' required but ${b.reason}`);
      else
        warn(
          `NO SANDBOX ISOLATION: ${b.reason}. Programs run with rlimits only and can see the host's files, network and processes. Install bubblewrap.`,
        );
    } else warn('NO SANDBOX ISOLATION: isolation "none" was requested; programs run with rlimits only.');
    this.cg = CgroupManager.create(this.tag);
    if (this.cg.reason) warn(`cgroups: ${this.cg.reason}; ${this.cg.version ? 'partial limits' : 'memory and process limits fall back to rlimits (RLIMIT_AS), no fork-bomb cap'}`);
    this.cg.sweepStale();
    for (const name of readdirSync(tmpdir())) {
      const m = /^rstar-sbx-(\d+)-\d+$/.exec(name);
      if (m && !pidAlive(Number(m[1]))) rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
    this.hostWorkRoot = join(tmpdir(), this.tag);
    mkdirSync(this.hostWorkRoot, { recursive: true });
    this.workers = [];
    for (let i = 0; i < this.nWorkers; i++) {
      this.cgroupsOf.push(this.cg.worker(i, this.sessionCap, this.pidsMax));
      this.generation.push(0);
    }
    try {
      this.workers = await Promise.all(Array.from({ length: this.nWorkers }, (_, i) => this.spawnWorker(i)));
    } catch (e) {
      this.state = 'running';
      await this.close();
      throw e;
    }
    this.state = 'running';
  }

  /** Whether worker `i` is a scipy zygote. */
  private isWarm(i: number): boolean {
    return i >= this.nLean;
  }

  private async spawnWorker(i: number): Promise<ZygoteWorker> {
    const w = new ZygoteWorker({
      index: i,
      python: this.python,
      pythonRoots: this.pythonRoots,
      zygoteRoot: ZYGOTE_ROOT,
      bwrap: this.isolation === 'bwrap',
      cgroups: this.cgroupsOf[i] ?? null,
      ...callUids(i, this.sessionCap),
      sessionCap: this.sessionCap,
      sessionIdleS: this.sessionIdleS,
      pidsMax: this.pidsMax,
      warmModules: this.isWarm(i) ? [...SCIPY_WARM_MODULES] : [],
      env: sandboxEnv,
      hostWorkRoot: join(this.hostWorkRoot, `w${i}`),
    });
    w.onExit = () => void this.replace(i);
    await w.start();
    return w;
  }

  /** A zygote died or was killed: start a fresh one; its sessions are lost (next call says so). */
  private async replace(i: number): Promise<void> {
    if (this.state !== 'running' || this.restarting.has(i)) return;
    this.restarting.add(i);
    this.restarts++;
    this.generation[i] = (this.generation[i] ?? 0) + 1;
    const old = this.workers[i];
    old?.kill();
    await old?.waitExit();
    for (;;) {
      if (this.state !== 'running') break;
      try {
        this.workers[i] = await this.spawnWorker(i);
        break;
      } catch (e) {
        this.warnings.push(`zygote ${i} restart failed: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    this.restarting.delete(i);
    this.dispatch();
  }

  /**
   * Run one program. Never throws: invalid requests give `invalid_request` (stderr names the field),
   * a full queue gives `overloaded`, a closed pool gives `sandbox_error`.
   */
  execute(request: ExecRequest): Promise<ExecResult> {
    if (this.state !== 'running')
      return Promise.resolve(poolResult('sandbox_error', `sandbox pool is ${this.state}: call start() first`));
    let req: ResolvedRequest;
    try {
      req = resolveRequest(request, this.defaults, this.maxima);
    } catch (e) {
      return Promise.resolve(poolResult('invalid_request', `${INVALID_REQUEST_PREFIX}${(e as Error).message}`));
    }
    if (this.queue.length >= this.queueLimit)
      return Promise.resolve(
        poolResult('overloaded', `sandbox overloaded: ${this.queue.length} requests already queued (limit ${this.queueLimit}); retry later`),
      );
    let worker = -1;
    const scipy = this.nScipy > 0 && USES_SCIPY.test(req.code);
    if (req.session) {
      const pin = this.sessionPin.get(req.session);
      if (pin) {
        worker = pin.worker;
        pin.last = Date.now();
      } else {
        worker = this.leastPinned(scipy);
        this.sessionPin.set(req.session, { worker, last: Date.now(), generation: this.generation[worker] ?? 0 });
      }
    }
    return new Promise((resolve) => {
      this.queue.push({ req, resolve, worker, scipy });
      this.dispatch();
    });
  }

  /**
   * End a session now (e.g. when its rollout finished) instead of waiting for idle expiry; its
   * interpreter and files are removed. Unknown ids are ignored. Never throws.
   */
  endSession(session: string): Promise<void> {
    const pin = this.sessionPin.get(session);
    if (!pin || this.state !== 'running') return Promise.resolve();
    this.sessionPin.delete(session);
    return new Promise((resolve) => {
      const req: ResolvedRequest = { code: '', input: '', session, echo: true, ...this.defaults };
      this.queue.push({ op: 'end_session', req, resolve: () => resolve(), worker: pin.worker });
      this.dispatch();
    });
  }

  /** The worker of the right kind (scipy or not, where both exist) holding the fewest sessions. */
  private leastPinned(scipy: boolean): number {
    this.expirePins();
    const counts = new Array<number>(this.nWorkers).fill(0);
    for (const p of this.sessionPin.values()) counts[p.worker]!++;
    let best = -1;
    for (let i = 0; i < counts.length; i++) {
      if (this.nScipy > 0 && this.isWarm(i) !== scipy) continue;
      if (best < 0 || counts[i]! < counts[best]!) best = i;
    }
    return best;
  }

  private expirePins(): void {
    const cutoff = Date.now() - this.sessionIdleS * 1000 - 60_000;
    for (const [k, p] of this.sessionPin) if (p.last < cutoff) this.sessionPin.delete(k);
  }

  private dispatch(): void {
    if (this.state !== 'running' || this.queue.length === 0) return;
    // Round robin from the worker after the last one used: a zygote forks its next call's child right
    // after answering, so the zygote that just answered is the slowest to take the next call. Programs
    // that mention scipy run on the scipy zygotes, all others on the lean ones (where both exist).
    const n = this.workers.length;
    for (let k = 0; k < n; k++) {
      const i = (this.nextWorker + k) % n;
      const w = this.workers[i]!;
      if (!w.alive || w.busy || this.restarting.has(i)) continue;
      const warm = this.isWarm(i);
      const idx = this.queue.findIndex((j) => j.worker === i || (j.worker === -1 && warm === Boolean(j.scipy)));
      if (idx < 0) continue;
      const job = this.queue.splice(idx, 1)[0]!;
      this.nextWorker = (i + 1) % n;
      void this.run(w, i, job);
      if (this.queue.length === 0) return;
    }
  }

  private async run(w: ZygoteWorker, i: number, job: Job): Promise<void> {
    const r = job.req;
    if (job.op === 'end_session') {
      await w.request({ op: 'end_session', session: r.session }, 10_000).catch(() => undefined);
      job.resolve(poolResult('ok', ''));
      this.dispatch();
      return;
    }
    let known = false;
    if (r.session) {
      const pin = this.sessionPin.get(r.session);
      // The session lived in a zygote that has since been replaced: its state is gone.
      if (pin && pin.generation !== this.generation[i]) {
        known = true;
        pin.generation = this.generation[i] ?? 0;
      }
    }
    const msg = {
      op: 'exec',
      timeoutMs: r.timeoutMs,
      memoryMb: r.memoryMb,
      outputChars: r.outputChars,
      hardOutputBytes: Math.max(8 << 20, r.outputChars * 8),
      session: r.session,
      known,
      echo: r.echo,
    };
    let result: ExecResult;
    try {
      const frame = await w.request(msg, r.timeoutMs + 10_000, r.code, r.input ?? '');
      result = execResultOf(frame, r.outputChars, r.memoryMb);
      if (r.session) {
        result.sessionReset = Boolean(frame.msg.sessionReset);
        result.sessionKept = frame.msg.sessionKept !== false && result.status !== 'sandbox_error';
      }
    } catch (e) {
      const backstop = e instanceof WorkerBackstopError;
      void this.replace(i);
      if (!backstop && !job.retried) {
        // The zygote died under this call (programs cannot signal it: it is infrastructure failing).
        // Run the call again on the replacement, once, so callers never see the restart.
        job.retried = true;
        this.queue.unshift(job);
        this.dispatch();
        return;
      }
      // The zygote hung past the backstop or died twice: report it, do not loop.
      result = poolResult(backstop ? 'timeout' : 'killed', `sandbox worker lost during the call (${(e as Error).message.split(';')[0]}); it was restarted`);
      result.signal = 'SIGKILL';
      result.wallMs = backstop ? r.timeoutMs : 0;
      if (r.session) {
        result.sessionReset = true;
        result.sessionKept = false;
      }
    }
    job.resolve(result);
    this.dispatch();
  }

  /** Current state for `/health`. */
  health(): SandboxHealth {
    const info = this.workers.find((w) => w.alive)?.info ?? {};
    const ready = this.workers.filter((w) => w.alive).length;
    return {
      ok: this.state === 'running' && ready > 0,
      isolation: this.isolation,
      warnings: [...this.warnings],
      cgroup: this.cg?.version === 1 ? 'v1' : this.cg?.version === 2 ? 'v2' : 'none',
      workers: { total: this.nWorkers, scipy: this.nScipy, ready, busy: this.workers.filter((w) => w.busy).length, restarts: this.restarts },
      queueDepth: this.queue.length,
      queueLimit: this.queueLimit,
      activeSessions: this.activeSessions(),
      python: {
        path: this.python,
        version: (info.python as string) ?? null,
        numpy: (info.numpy as string) ?? null,
        sympy: (info.sympy as string) ?? null,
        immortalizedObjects: Number(info.immortalized ?? 0),
      },
      intMaxStrDigits: Number(info.intMaxStrDigits ?? 0),
      defaults: { ...this.defaults },
      maxima: { timeoutMs: this.maxima.timeoutMs, memoryMb: this.maxima.memoryMb, outputChars: this.maxima.outputChars },
    };
  }

  /**
   * CPU time in ms (user + system) used so far by this pool's processes: every zygote, the call
   * children and session interpreters it reaped, and those alive now. For benchmarks: it does not
   * depend on what else the host runs. Null without cgroups (the processes cannot be enumerated).
   */
  cpuUsageMs(): number | null {
    if (!this.cgroupsOf.some((c) => c)) return null;
    let ms = 0;
    for (const c of this.cgroupsOf) {
      if (!c) continue;
      for (const p of CgroupManager.pids(c.zygote)) ms += procCpuMs(p, true);
      for (const leaf of [c.call, ...c.sessions]) for (const p of CgroupManager.pids(leaf)) ms += procCpuMs(p, false);
    }
    return ms;
  }

  /** Requests waiting for a worker. */
  get queueDepth(): number {
    return this.queue.length;
  }

  /** Session ids pinned to a worker and not idle past expiry. */
  activeSessions(): number {
    const cutoff = Date.now() - this.sessionIdleS * 1000;
    let n = 0;
    for (const p of this.sessionPin.values()) if (p.last >= cutoff) n++;
    return n;
  }

  /** Stop every zygote (sessions end), answer queued requests with `sandbox_error`, remove cgroups and temp dirs. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    for (const j of this.queue.splice(0)) j.resolve(poolResult('sandbox_error', 'sandbox pool closed before the call ran'));
    await Promise.all(this.workers.map((w) => w.stop()));
    for (const c of this.cgroupsOf) if (c) CgroupManager.removeWorker(c);
    this.cg?.destroy();
    if (this.hostWorkRoot) rmSync(this.hostWorkRoot, { recursive: true, force: true });
  }
}
