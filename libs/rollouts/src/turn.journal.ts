import type { TurnRecord } from '@rstar/agent';

/** Options of {@link TurnJournal}. */
export interface TurnJournalOptions {
  /** Keep a rollout's turns this long after its last recorded turn, in ms (default 600000). */
  keepMs?: number;
  /** Most rollouts kept; the oldest go first (default 20000). */
  maxRollouts?: number;
  /** Milliseconds clock (default `Date.now`). */
  clock?: () => number;
}

/**
 * The turns already published (`TurnGenerated`) per rollout: what a redone rollout must continue from.
 * Sampling is not bit-reproducible across engine batches, so a rollout redone after a crash that
 * regenerated its turns would re-publish different text under the recorded ids (the bus drops them as
 * duplicates) and end with a `RolloutCompleted` contradicting its archived turns and tool calls.
 * Bounded by age and count: turns of rollouts that never come back here (other instances') expire.
 */
export class TurnJournal {
  private readonly byRollout = new Map<string, { turns: Map<number, TurnRecord>; at: number }>();
  private readonly keepMs: number;
  private readonly maxRollouts: number;
  private readonly clock: () => number;

  constructor(opts: TurnJournalOptions = {}) {
    this.keepMs = opts.keepMs ?? 600_000;
    this.maxRollouts = opts.maxRollouts ?? 20_000;
    this.clock = opts.clock ?? Date.now;
  }

  /** Record a published turn (idempotent: a redelivered `TurnGenerated` replaces its identical copy). */
  record(rolloutId: string, turn: TurnRecord): void {
    const now = this.clock();
    let entry = this.byRollout.get(rolloutId);
    if (entry) this.byRollout.delete(rolloutId); // re-inserted last: Map order = least recently recorded first
    else entry = { turns: new Map(), at: now };
    entry.turns.set(turn.turn, { ...turn });
    entry.at = now;
    this.byRollout.set(rolloutId, entry);
    for (const [id, e] of this.byRollout) {
      if (now - e.at <= this.keepMs && this.byRollout.size <= this.maxRollouts) break;
      this.byRollout.delete(id);
    }
  }

  /** The recorded turn `turn` of `rolloutId`, if any. */
  get(rolloutId: string, turn: number): TurnRecord | undefined {
    const t = this.byRollout.get(rolloutId)?.turns.get(turn);
    return t ? { ...t } : undefined;
  }

  /** Drop a rollout's turns (its `RolloutCompleted` is stored). */
  forget(rolloutId: string): void {
    this.byRollout.delete(rolloutId);
  }

  /** Rollouts with recorded turns. */
  get size(): number {
    return this.byRollout.size;
  }
}
