/** What a {@link LogFollower} runs; the follower owns only the scheduling. */
export interface LogFollowerOptions {
  /** Apply the next batch of archived events; resolves with how many it covered. May throw (retried with backoff). */
  batch(): Promise<number>;
  /** The batch size: a batch this full means more events are waiting, so the next one starts at once. */
  batchSize: number;
  /** Wait after a partial batch (caught up), in ms: events arriving meanwhile go into one batch. */
  pollMs: number;
  /** Refresh the follower's lag gauge; called at most every 5 s (its errors are ignored). */
  refreshLag(): Promise<unknown>;
  /** A failed batch; `attempt` counts the failures in a row (1 for the first). */
  onError(err: unknown, attempt: number): void;
}

/** Longest wait between retries of a failing batch, in ms. */
const MAX_BACKOFF_MS = 10_000;
const LAG_EVERY_MS = 5_000;

/**
 * Runs a follower of the archive's log in the background (the read-model projector, the Kafka export):
 * full batches back to back while it is behind, a pause of `pollMs` after a partial one, exponential
 * backoff (250 ms doubling, at most 10 s) while batches fail, the lag gauge refreshed every few seconds.
 * Each batch is one transaction whatever its size, so pausing after a small batch lets a live run
 * stream into large ones instead of spending the follower's CPU on many tiny transactions.
 */
export class LogFollower {
  private running: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;

  constructor(private readonly opts: LogFollowerOptions) {}

  /** True between {@link stop} being called and the loop's end. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** Start the loop (no-op while it runs). */
  start(): void {
    if (this.running) return;
    this.stopping = false;
    this.running = (async () => {
      let failures = 0;
      let lastLag = 0;
      while (!this.stopping) {
        let n = 0;
        try {
          n = await this.opts.batch();
          failures = 0;
        } catch (e) {
          failures++;
          this.opts.onError(e, failures);
        }
        if (Date.now() - lastLag > LAG_EVERY_MS) {
          lastLag = Date.now();
          await this.opts.refreshLag().catch(() => undefined);
        }
        if (n < this.opts.batchSize && !this.stopping) {
          const ms = failures ? Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(failures, 6)) : this.opts.pollMs;
          await new Promise<void>((r) => {
            const t = setTimeout(r, ms);
            this.wake = () => (clearTimeout(t), r());
          });
        }
      }
    })();
  }

  /** Stop after the batch in progress (a pause is cut short); resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.running;
    this.running = null;
  }
}
