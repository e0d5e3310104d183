import type { RunViewReader } from './run-views.port';
import type { RunListItem, RunLiveUpdate } from './views';

/** Stops a follower; resolves once no poll is in flight. */
export type StopFollowing = () => Promise<void>;

export interface FollowOptions {
  /** Milliseconds between polls of the archive (default 1000). */
  intervalMs?: number;
  /** A poll failed (the archive is down, say); polling goes on. */
  onError?: (e: Error) => void;
}

/**
 * Follow a run as it is archived: polls `reader.changes(runId, cursor)` every `intervalMs` and calls
 * `onUpdate` with each batch of newly archived steps, rollouts and evaluations, moving the cursor on.
 * Polling the archive (not the bus) means the page sees exactly what is stored, in archive order, and
 * a follower that reconnects with its last cursor misses nothing.
 */
export function followRun(reader: RunViewReader, runId: string, cursor: string, onUpdate: (u: RunLiveUpdate) => void, opts: FollowOptions = {}): StopFollowing {
  let at = cursor;
  return poll(async () => {
    const u = await reader.changes(runId, at);
    if (u) {
      at = u.cursor;
      onUpdate(u);
    }
  }, opts);
}

/** Follow the runs list: calls `onList` first and whenever a run's row changes (same polling as {@link followRun}). */
export function followRuns(reader: RunViewReader, limit: number, onList: (runs: RunListItem[]) => void, opts: FollowOptions = {}): StopFollowing {
  let last = '';
  return poll(async () => {
    const runs = await reader.listRuns({ limit });
    const text = JSON.stringify(runs);
    if (text !== last) {
      last = text;
      onList(runs);
    }
  }, opts);
}

function poll(tick: () => Promise<void>, opts: FollowOptions): StopFollowing {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> = Promise.resolve();
  const run = () => {
    timer = null;
    inFlight = tick()
      .catch((e) => opts.onError?.(e instanceof Error ? e : new Error(String(e))))
      .finally(() => {
        if (!stopped) timer = setTimeout(run, opts.intervalMs ?? 1000);
      });
  };
  run();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await inFlight;
  };
}
