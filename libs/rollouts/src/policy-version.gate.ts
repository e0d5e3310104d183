/**
 * One policy version of one run: what the engines hold. `runId` null = configured at start for any run
 * (RSTAR_POLICY_VERSION); `at` = when its `PolicyUpdated` was recorded (ms since epoch; 0 at start).
 */
export interface PolicyRef {
  runId: string | null;
  version: number;
  at: number;
}

/**
 * True when `a` is a later policy than `b`: a higher version of the same run, or, across runs (versions
 * restart at 0 with every run), a `PolicyUpdated` recorded later, so an old run's update redelivered
 * after a restart never replaces the current run's weights.
 */
export function isNewerPolicy(a: PolicyRef, b: PolicyRef): boolean {
  if (a.runId === b.runId || a.runId === null || b.runId === null) return a.version > b.version;
  return a.at > b.at;
}

/**
 * Serialises weight updates with rollouts: rollouts run while no update is pending; an update waits
 * until in-flight rollouts finish, runs alone, and only then lets new rollouts start ("reload weights
 * between rollouts"). Rollouts asking for a newer version of their run than loaded wait for it.
 */
export class PolicyVersionGate {
  private running = 0;
  private updating: Promise<void> | null = null;
  private idleWaiters: (() => void)[] = [];
  private versionWaiters: (() => void)[] = [];
  private current: PolicyRef;

  /** `initial`: the version the engines hold at start, for any run (default 0). */
  constructor(initial: number | PolicyRef = 0) {
    this.current = typeof initial === 'number' ? { runId: null, version: initial, at: 0 } : { ...initial };
  }

  /** The policy the engines hold now. */
  get loaded(): PolicyRef {
    return { ...this.current };
  }

  /** The version number the engines hold now (of {@link loaded}'s run). */
  get loadedVersion(): number {
    return this.current.version;
  }

  /** Rollouts in flight. */
  get inFlight(): number {
    return this.running;
  }

  /**
   * Enter a rollout of `runId`: waits for a pending update and for the run's `minVersion` (up to
   * `waitMs`). Version 0 is the run's starting policy and never waited for. Returns the run's version the
   * rollout runs on, or null when `minVersion` did not arrive in time.
   */
  async enter(runId: string, minVersion: number, waitMs: number): Promise<number | null> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (this.updating) await this.updating;
      else if (!this.serves(runId, minVersion)) {
        const left = deadline - Date.now();
        if (left <= 0) return null;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          this.versionWaiters.push(() => { clearTimeout(t); resolve(); });
        });
      } else {
        this.running++;
        return this.ofRun(runId) ? this.current.version : minVersion;
      }
    }
  }

  leave(): void {
    this.running--;
    if (this.running === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Apply an update to `ref` with `load` once no rollout runs; policies not newer than loaded are skipped. */
  async update(ref: PolicyRef, load: () => Promise<void>): Promise<boolean> {
    while (this.updating) await this.updating;
    if (!isNewerPolicy(ref, this.current)) return false;
    let done!: () => void;
    this.updating = new Promise<void>((r) => (done = r));
    try {
      if (this.running > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      await load();
      this.current = { ...ref };
      return true;
    } finally {
      this.updating = null;
      done();
      for (const w of this.versionWaiters.splice(0)) w();
    }
  }

  private ofRun(runId: string): boolean {
    return this.current.runId === null || this.current.runId === runId;
  }

  private serves(runId: string, minVersion: number): boolean {
    return minVersion === 0 || (this.ofRun(runId) && this.current.version >= minVersion);
  }
}
