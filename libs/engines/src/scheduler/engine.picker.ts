/**
 * Scheduling policies: rStar2's KV-budget assignment, its adaptive form for engines that retract on
 * overflow (`kv-adaptive`), and two baselines for comparison.
 */
export const SCHEDULING_POLICIES = ['kv-budget', 'kv-adaptive', 'least-requests', 'round-robin'] as const;
export type SchedulingPolicy = (typeof SCHEDULING_POLICIES)[number];

/** One engine as the scheduler sees it; tokens for `capacity`/`reserved`. */
export interface EngineLoad {
  id: string;
  /** KV-cache capacity in tokens (from the engine's server info). */
  capacity: number;
  /** Tokens reserved by the rollouts assigned to it. */
  reserved: number;
  /** Rollouts assigned to it. */
  leases: number;
  /** Generation requests in flight on it. */
  outstanding: number;
  up: boolean;
  /**
   * How far the projected KV peak may exceed capacity under `kv-adaptive` (kv-projection.ts; 1 or absent =
   * not at all), set from the engine's observed KV usage and retractions.
   */
  admitFactor?: number;
}

/** The KV tokens a budgeted policy may still reserve on `e`. */
export function freeBudget(policy: SchedulingPolicy, e: EngineLoad): number {
  return (policy === 'kv-adaptive' ? (e.admitFactor ?? 1) : 1) * e.capacity - e.reserved;
}

/**
 * Choose the engine for a new rollout needing `demand` tokens (pure).
 * - `kv-budget` (docs/design/protocol.md §7, rStar2 §3): the live engine with the most free KV capacity among those that
 *   can hold `demand`; null = wait (none fits). Ties: fewer outstanding requests, then list order.
 * - `kv-adaptive`: the same choice over `admitFactor x capacity` ({@link freeBudget}); the scheduler itself
 *   places `kv-adaptive` rollouts by their projected KV peak instead (RolloutScheduler, kv-projection.ts).
 * - `least-requests`: the live engine with the fewest outstanding requests (then fewest leases, list order); ignores capacity.
 * - `round-robin`: the next live engine after `cursor`; ignores load and capacity.
 * Returns the chosen index (or null) and the new round-robin cursor.
 */
export function pickEngine(policy: SchedulingPolicy, engines: readonly EngineLoad[], demand: number, cursor: number): { index: number | null; cursor: number } {
  const live = engines.map((e, i) => ({ e, i })).filter((x) => x.e.up);
  if (live.length === 0) return { index: null, cursor };
  switch (policy) {
    case 'kv-budget':
    case 'kv-adaptive': {
      let best: { e: EngineLoad; i: number } | null = null;
      for (const x of live) {
        const free = freeBudget(policy, x.e);
        if (free < demand) continue;
        if (!best) { best = x; continue; }
        const bestFree = freeBudget(policy, best.e);
        if (free > bestFree || (free === bestFree && x.e.outstanding < best.e.outstanding)) best = x;
      }
      return { index: best ? best.i : null, cursor };
    }
    case 'least-requests': {
      let best = live[0];
      for (const x of live) {
        if (x.e.outstanding < best.e.outstanding || (x.e.outstanding === best.e.outstanding && x.e.leases < best.e.leases)) best = x;
      }
      return { index: best.i, cursor };
    }
    case 'round-robin': {
      for (let k = 0; k < engines.length; k++) {
        const i = (cursor + k) % engines.length;
        if (engines[i].up) return { index: i, cursor: (i + 1) % engines.length };
      }
      return { index: null, cursor };
    }
  }
}
