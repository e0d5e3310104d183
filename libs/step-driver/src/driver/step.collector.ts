import type { EventData, RstarEvent } from '@rstar/contracts';

/**
 * Collects one run's `GroupResampled` and `RolloutCompleted` events as they arrive (any order,
 * duplicates harmless) and wakes whoever waits for a step's groups. Pure state plus a change signal.
 */
export class StepCollector {
  readonly groups = new Map<string, EventData<'GroupResampled'>>();
  readonly rollouts = new Map<string, EventData<'RolloutCompleted'>>();
  /** The trace context each rollout's completion was published in (to link the step's spans to the rollouts' traces). */
  readonly traceparents = new Map<string, string>();
  /** The run's `RunFailed`, when another stage failed it (e.g. policy-serving on a weight-sync mismatch). */
  failed: EventData<'RunFailed'> | null = null;
  private waiters: Array<() => void> = [];

  constructor(private readonly runId: string) {}

  /** Feed an event (`GroupResampled`, `RolloutCompleted`, `RunFailed`); events of other runs and other types are ignored. */
  add(e: RstarEvent): void {
    if (e.runId !== this.runId) return;
    if (e.type === 'GroupResampled') this.groups.set(e.data.groupId, e.data);
    else if (e.type === 'RolloutCompleted') {
      this.rollouts.set(e.data.rolloutId, e.data);
      if (e.meta.traceparent) this.traceparents.set(e.data.rolloutId, e.meta.traceparent);
    } else if (e.type === 'RunFailed') this.failed = e.data;
    else return;
    this.wake();
  }

  /** Wake every waiter (on a new event, or to let a stopping driver notice). */
  wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }

  /** True when every group is resampled and every rollout it received has its RolloutCompleted. */
  complete(groupIds: readonly string[]): boolean {
    return groupIds.every((g) => {
      const d = this.groups.get(g);
      return !!d && Object.keys(d.rewards).every((id) => this.rollouts.has(id));
    });
  }

  /** Resolves on the next added event. */
  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Free a finished step's data. */
  forget(groupIds: readonly string[]): void {
    const gs = new Set(groupIds);
    for (const [id, r] of this.rollouts) {
      if (!gs.has(r.groupId)) continue;
      this.rollouts.delete(id);
      this.traceparents.delete(id);
    }
    for (const g of gs) this.groups.delete(g);
  }
}
