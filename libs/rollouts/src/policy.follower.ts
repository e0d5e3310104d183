import { RstarError } from '@rstar/contracts';
import type { DistributedUpdate } from '@rstar/engines';
import { isNewerPolicy, type PolicyRef, type PolicyVersionGate } from './policy-version.gate';

/** A policy to load: its ref, its checkpoint hash when the update carried one, and its distributed sync when it has one. */
export type FollowedPolicy = PolicyRef & { checkpointHash?: string; sync?: DistributedUpdate };

/** The follower was closed (policy-serving stopping): held updates are released unacknowledged. */
export class PolicyFollowerClosedError extends RstarError {
  constructor(reason: string) {
    super('policy_follower_closed', `policy follower closed: ${reason}`);
  }
}

/**
 * Follows `PolicyUpdated` for one policy-serving instance: loads the newest policy it was offered
 * through the {@link PolicyVersionGate} (between rollouts), coalescing a burst of updates into one load
 * of the newest (a replay after a restart), and tells each update's consumer when it may be acked.
 *
 * Why hold the newest update: the engines' version lives only in this process. The `PolicyUpdated`
 * consumer is durable per instance, so the newest update is kept unacknowledged until a newer version is
 * loaded; when the process dies, JetStream redelivers it to the restarted instance, which loads it again
 * instead of starting at version 0 and leaving rollouts for version N waiting forever.
 */
export class PolicyFollower {
  private target: { ref: FollowedPolicy; uri: string } | null = null;
  private loading: Promise<void> | null = null;
  private holds: Array<{ above: PolicyRef; resolve: () => void; reject: (e: Error) => void }> = [];
  private closed: PolicyFollowerClosedError | null = null;

  constructor(
    private readonly gate: PolicyVersionGate,
    /** Loads a checkpoint; `ref` names the policy (with its checkpoint hash when the update carried one). */
    private readonly load: (checkpointUri: string, ref?: FollowedPolicy) => Promise<void>,
  ) {}

  /**
   * Make the engines hold `ref` (loaded from `checkpointUri`) or a newer policy (see {@link isNewerPolicy}).
   * Resolves true when a load covering it ran, false when the engines already held it or newer.
   * @throws the load's error (the update should be redelivered); PolicyFollowerClosedError after close().
   */
  async apply(ref: FollowedPolicy, checkpointUri: string): Promise<boolean> {
    if (this.closed) throw this.closed;
    if (!isNewerPolicy(ref, this.gate.loaded)) return false;
    if (!this.target || isNewerPolicy(ref, this.target.ref)) this.target = { ref: { ...ref }, uri: checkpointUri };
    // A drive that had already passed its last check when this target was set ends without loading it.
    while (isNewerPolicy(ref, this.gate.loaded)) {
      if (this.closed) throw this.closed;
      await this.drive();
    }
    return true;
  }

  /**
   * Resolves once a policy newer than `ref` is loaded: the moment the update of `ref` is no longer
   * needed to restore the engines. @throws PolicyFollowerClosedError when closed first.
   */
  superseded(ref: PolicyRef): Promise<void> {
    if (this.closed) return Promise.reject(this.closed);
    if (isNewerPolicy(this.gate.loaded, ref)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.holds.push({ above: { ...ref }, resolve, reject }));
  }

  /** Updates held now (unacked on the bus). */
  get held(): number {
    return this.holds.length;
  }

  /** Release every hold with PolicyFollowerClosedError (their messages are then redelivered). Idempotent. */
  close(reason: string): void {
    if (this.closed) return;
    this.closed = new PolicyFollowerClosedError(reason);
    for (const h of this.holds.splice(0)) h.reject(this.closed);
  }

  private drive(): Promise<void> {
    if (this.loading) return this.loading;
    const run = async () => {
      // Yield first, so `loading` is set before the loop can finish and clear it.
      await Promise.resolve();
      try {
        while (!this.closed && this.target && isNewerPolicy(this.target.ref, this.gate.loaded)) {
          const t = this.target;
          await this.gate.update(t.ref, () => this.load(t.uri, t.ref));
          this.release();
        }
      } finally {
        this.loading = null;
      }
    };
    this.loading = run();
    return this.loading;
  }

  private release(): void {
    const loaded = this.gate.loaded;
    this.holds = this.holds.filter((h) => {
      if (!isNewerPolicy(loaded, h.above)) return true;
      h.resolve();
      return false;
    });
  }
}
