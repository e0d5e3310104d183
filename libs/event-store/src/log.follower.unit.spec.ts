import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LogFollower } from './log.follower';

/** A follower whose batches return `sizes` in turn (a thrown Error for 'fail'), then 0; records when each ran. */
function follower(sizes: Array<number | 'fail'>, pollMs = 250) {
  const calls: number[] = [];
  const errors: number[] = [];
  let lags = 0;
  const f = new LogFollower({
    batch: async () => {
      calls.push(Date.now());
      const n = sizes.shift() ?? 0;
      if (n === 'fail') throw new Error('database away');
      return n;
    },
    batchSize: 100,
    pollMs,
    refreshLag: async () => void lags++,
    onError: (_e, attempt) => void errors.push(attempt),
  });
  return { f, calls, errors, lags: () => lags };
}

describe('LogFollower (the projector and Kafka export loop)', () => {
  beforeEach(() => void vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => void vi.useRealTimers());

  it('runs full batches back to back and pauses pollMs after a partial one', async () => {
    const { f, calls } = follower([100, 100, 40, 100, 0]);
    f.start();
    await vi.advanceTimersByTimeAsync(0);
    // Two full batches and the partial one ran at once; the next waits for the poll.
    expect(calls.map((t) => t - 1_000_000)).toEqual([0, 0, 0]);
    await vi.advanceTimersByTimeAsync(249);
    expect(calls.length).toBe(3);
    await vi.advanceTimersByTimeAsync(1);
    // After the pause: a full batch, and straight away the empty one that follows it.
    expect(calls.map((t) => t - 1_000_000)).toEqual([0, 0, 0, 250, 250]);
    await f.stop();
  });

  it('backs off while batches fail (250 ms doubling), reports each failure, and resets after a success', async () => {
    const { f, calls, errors } = follower(['fail', 'fail', 'fail', 100, 0], 50);
    f.start();
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(500); // first retry after 500 ms (250 * 2^1)
    await vi.advanceTimersByTimeAsync(1000); // second after 1 s
    await vi.advanceTimersByTimeAsync(2000); // third after 2 s: succeeds (full), then an empty batch at once
    expect(calls.map((t) => t - 1_000_000)).toEqual([0, 500, 1500, 3500, 3500]);
    expect(errors).toEqual([1, 2, 3]);
    await vi.advanceTimersByTimeAsync(50);
    expect(calls.length).toBe(6); // back to the 50 ms poll
    await f.stop();
  });

  it('stop cuts a pause short and ends the loop; the lag is refreshed at most every 5 s', async () => {
    const { f, calls, lags } = follower([]);
    f.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls.length).toBe(41); // one at 0, then every 250 ms
    expect(lags()).toBe(2);
    const stopped = f.stop();
    await vi.advanceTimersByTimeAsync(0);
    await stopped;
    expect(f.isStopping).toBe(true);
    const n = calls.length;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls.length).toBe(n);
  });
});
