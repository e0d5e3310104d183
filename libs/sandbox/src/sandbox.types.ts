/**
 * Status of one execution (docs/design/protocol.md §3, docs/design/architecture.md §5); `overloaded` = refused by admission control;
 * `invalid_request` = the request itself was malformed (not JSON, a field missing or wrong): it never
 * ran, and stderr names the field and the fix. `sandbox_error` is kept for failures of the sandbox.
 */
export type ExecStatus =
  | 'ok'
  | 'runtime_error'
  | 'timeout'
  | 'memory_limit'
  | 'output_limit'
  | 'killed'
  | 'sandbox_error'
  | 'overloaded'
  | 'invalid_request';

/** One program to run. */
export interface ExecRequest {
  /** Python source. */
  code: string;
  /** stdin contents (UTF-8). */
  input?: string;
  /** Wall-clock limit in ms (default 4,000; clamped to the pool's maximum). */
  timeoutMs?: number;
  /** Memory limit in MiB of pages the call itself allocates (default 384; clamped to [32, max]). */
  memoryMb?: number;
  /** Stateful session id (the `jupyter_code` tool): one live interpreter per id, variables persist. */
  session?: string;
  /** Characters kept per stream (default 1,000; head and tail kept, `truncated` set). */
  outputChars?: number;
  /**
   * Print the repr of a final bare expression (docs/design/protocol.md §3, IPython-like; default true). `false` runs
   * the program exactly as `python3 prog.py` would (what SandboxFusion and code-judge callers expect).
   */
  echo?: boolean;
}

/** Outcome of one execution. `exitCode` is null when the process died by a signal (`signal` names it). */
export interface ExecResult {
  status: ExecStatus;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: string | null;
  /** Wall-clock duration of the program in ms (queueing excluded). */
  wallMs: number;
  /** CPU time (user + system) of the program in ms. */
  cpuMs: number;
  /** True when stdout or stderr was cut to `outputChars`. */
  truncated: boolean;
  /** Session calls only: true when this call did not run in (or destroyed) the session's earlier interpreter. */
  sessionReset?: boolean;
  /**
   * Session calls only: true when the session's interpreter, and so its namespace, lives on after this
   * call (also after a cell that ran into its time limit and stopped when interrupted); false when it was
   * killed (the next call starts afresh and says `sessionReset`).
   */
  sessionKept?: boolean;
}

/** Per-call limits with every field resolved. */
export interface ExecLimits {
  timeoutMs: number;
  memoryMb: number;
  outputChars: number;
}

/** Isolation mode: `auto` = bubblewrap when present, else rlimits only (with a loud warning). */
export type IsolationMode = 'auto' | 'bwrap' | 'none';

/** Options of {@link SandboxPool}. */
export interface SandboxPoolOptions {
  /** Number of lean zygotes, the ones every program without scipy runs on (default: twice the CPU count, at least 4). */
  workers?: number;
  /** Python binary (default: env RSTAR_PYTHON, else `<repoRoot>/.venv/bin/python`, else `python3`). */
  python?: string;
  isolation?: IsolationMode;
  /** Limits applied when a request omits them. */
  defaults?: Partial<ExecLimits>;
  /** Server maxima: a request asking for more is clamped down. */
  maxima?: Partial<ExecLimits> & { inputBytes?: number; codeBytes?: number };
  /** Requests waiting beyond this are answered `overloaded` at once (default 4,096). */
  queueLimit?: number;
  /** Sessions kept per worker; the least recently used is reset past it (default 8). */
  sessionsPerWorker?: number;
  /** Idle seconds before a session expires (default 300). */
  sessionIdleS?: number;
  /** Tasks per call: processes, threads and unreaped zombies (cgroup pids.max, default 256). */
  pidsMax?: number;
  /**
   * scipy zygotes, on top of `workers`: they also import scipy's submodules before forking, and every
   * program that mentions scipy runs on one (default 1; 0 = none: such programs run on the lean ones).
   */
  scipyWorkers?: number;
  /** Called with human-readable warnings (default: console.warn). */
  onWarning?: (message: string) => void;
}

/** What {@link SandboxPool.health} reports. */
export interface SandboxHealth {
  ok: boolean;
  isolation: 'bwrap' | 'none';
  /** Set when isolation is weaker than asked for or than the design expects. */
  warnings: string[];
  cgroup: 'v1' | 'v2' | 'none';
  /** `total` zygotes, `scipy` of them the scipy zygotes (SandboxPoolOptions.scipyWorkers). */
  workers: { total: number; scipy: number; ready: number; busy: number; restarts: number };
  queueDepth: number;
  queueLimit: number;
  activeSessions: number;
  python: {
    path: string;
    version: string | null;
    numpy: string | null;
    sympy: string | null;
    /** Objects of the zygote's warmed heap made immortal before forking (PEP 683; 0 before CPython 3.12). */
    immortalizedObjects: number;
  };
  /** CPython's int->str digit limit inside the sandbox (0 = unlimited). */
  intMaxStrDigits: number;
  defaults: ExecLimits;
  maxima: ExecLimits;
}
