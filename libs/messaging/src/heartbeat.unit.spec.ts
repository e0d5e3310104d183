import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { withHeartbeat } from './heartbeat';

describe('withHeartbeat', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('extends the deadline every third of the ack wait while the work runs, and not after it settles', async () => {
    let beats = 0;
    let finish!: (v: string) => void;
    const running = withHeartbeat({ working: () => beats++ }, 3_000, () => new Promise<string>((r) => (finish = r)));
    await vi.advanceTimersByTimeAsync(999);
    expect(beats).toBe(0);
    await vi.advanceTimersByTimeAsync(2_001);
    expect(beats).toBe(3);
    finish('done');
    await expect(running).resolves.toBe('done');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(beats).toBe(3);
  });

  it('stops beating when the work rejects, and passes the rejection on', async () => {
    let beats = 0;
    let fail!: (e: Error) => void;
    const running = withHeartbeat({ working: () => beats++ }, 300, () => new Promise<never>((_, r) => (fail = r)));
    running.catch(() => undefined);
    await vi.advanceTimersByTimeAsync(250);
    expect(beats).toBe(2);
    fail(new Error('grader crashed'));
    await expect(running).rejects.toThrow('grader crashed');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(beats).toBe(2);
  });
});
