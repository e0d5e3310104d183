/**
 * Serialises weight updates with rollouts: rollouts run while no update is pending; an update waits
 * until in-flight rollouts finish, runs alone, and only then lets new rollouts start ("reload weights
 * between rollouts"). Rollouts asking for a newer version than loaded wait for it.
 */
export class PolicyVersionGate {
  private running = 0;
  private updating: Promise<void> | null = null;
  private idleWaiters: (() => void)[] = [];
  private versionWaiters: (() => void)[] = [];

  constructor(public loadedVersion: number) {}

  /** Rollouts in flight. */
  get inFlight(): number {
    return this.running;
  }

  /**
   * Enter a rollout: waits for a pending update and for `minVersion` (up to `waitMs`). Returns the loaded
   * version the rollout runs on, or null when `minVersion` did not arrive in time.
   */
  async enter(minVersion: number, waitMs: number): Promise<number | null> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (this.updating) await this.updating;
      else if (this.loadedVersion < minVersion) {
        const left = deadline - Date.now();
        if (left <= 0) return null;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          this.versionWaiters.push(() => { clearTimeout(t); resolve(); });
        });
      } else {
        this.running++;
        return this.loadedVersion;
      }
    }
  }

  leave(): void {
    this.running--;
    if (this.running === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Apply an update to `version` with `load` once no rollout runs; versions not newer than loaded are skipped. */
  async update(version: number, load: () => Promise<void>): Promise<boolean> {
    while (this.updating) await this.updating;
    if (version <= this.loadedVersion) return false;
    let done!: () => void;
    this.updating = new Promise<void>((r) => (done = r));
    try {
      if (this.running > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      await load();
      this.loadedVersion = version;
      return true;
    } finally {
      this.updating = null;
      done();
      for (const w of this.versionWaiters.splice(0)) w();
    }
  }
}
