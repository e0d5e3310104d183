import { describe, expect, it } from 'vitest';
import { pickEngine, type EngineLoad } from './engine.picker';
import { DEFAULT_ADMISSION } from './kv-admission.controller';
import { RolloutScheduler } from './rollout.scheduler';

const load = (id: string, capacity: number, reserved = 0, outstanding = 0, up = true): EngineLoad => ({ id, capacity, reserved, leases: 0, outstanding, up });

describe('pickEngine', () => {
  it('kv-budget picks the engine with the most free capacity that fits, or none', () => {
    const engines = [load('a', 100, 70), load('b', 100, 20), load('c', 200, 150)];
    expect(pickEngine('kv-budget', engines, 30, 0).index).toBe(1);
    expect(pickEngine('kv-budget', engines, 81, 0).index).toBeNull();
    expect(pickEngine('kv-budget', [load('a', 100, 0, 3), load('b', 100, 0, 1)], 10, 0).index).toBe(1);
  });

  it('least-requests ignores capacity; round-robin cycles over live engines', () => {
    expect(pickEngine('least-requests', [load('a', 10, 9, 0), load('b', 100, 0, 2)], 50, 0).index).toBe(0);
    const engines = [load('a', 1), load('b', 1, 0, 0, false), load('c', 1)];
    const first = pickEngine('round-robin', engines, 5, 0);
    const second = pickEngine('round-robin', engines, 5, first.cursor);
    const third = pickEngine('round-robin', engines, 5, second.cursor);
    expect([first.index, second.index, third.index]).toEqual([0, 2, 0]);
  });

  it('skips engines that are down', () => {
    expect(pickEngine('kv-budget', [load('a', 100, 0, 0, false), load('b', 50)], 10, 0).index).toBe(1);
    expect(pickEngine('least-requests', [load('a', 100, 0, 0, false)], 10, 0).index).toBeNull();
  });
});

describe('RolloutScheduler (kv-budget)', () => {
  it('never exceeds capacity: waits when nothing fits and grants on release', () => {
    const s = new RolloutScheduler('kv-budget', [{ id: 'a', capacity: 100 }, { id: 'b', capacity: 100 }]);
    expect(s.acquire('r1', 60)?.engineId).toBe('a');
    expect(s.acquire('r2', 60)?.engineId).toBe('b');
    expect(s.acquire('r3', 60)).toBeNull();
    expect(s.acquire('r4', 30)).toBeNull(); // does not overtake the waiter
    expect(s.waiting()).toEqual(['r3', 'r4']);
    const grants = s.release('r1');
    expect(grants.map((g) => [g.rolloutId, g.engineId])).toEqual([['r3', 'a'], ['r4', 'a']]);
    expect(s.snapshot().every((e) => e.reserved <= e.capacity)).toBe(true);
    expect(s.stats).toMatchObject({ overflows: 0, queued: 2, peakReserved: { a: 90, b: 60 } });
  });

  it('is sticky: a second acquire returns the same lease', () => {
    const s = new RolloutScheduler('kv-budget', [{ id: 'a', capacity: 100 }, { id: 'b', capacity: 100 }]);
    const l = s.acquire('r1', 10);
    expect(s.acquire('r1', 10)).toBe(l);
    expect(s.snapshot().map((e) => e.reserved)).toEqual([10, 0]);
  });

  it('releases a queued rollout without granting it', () => {
    const s = new RolloutScheduler('kv-budget', [{ id: 'a', capacity: 10 }]);
    s.acquire('r1', 10);
    s.acquire('r2', 10);
    expect(s.release('r2')).toEqual([]);
    expect(s.release('r1')).toEqual([]);
    expect(s.snapshot()[0].reserved).toBe(0);
  });

  it('rejects a rollout larger than every engine', () => {
    const s = new RolloutScheduler('kv-budget', [{ id: 'a', capacity: 10 }]);
    expect(() => s.acquire('r1', 11)).toThrow(expect.objectContaining({ code: 'reservation_too_large' }));
  });

  it('moves the leases of an engine that went down, ahead of other waiters', () => {
    const s = new RolloutScheduler('kv-budget', [{ id: 'a', capacity: 100 }, { id: 'b', capacity: 100 }]);
    s.acquire('r1', 50); // a
    s.acquire('r2', 50); // b
    s.acquire('r3', 50); // a
    s.acquire('r4', 50); // b
    expect(s.acquire('r5', 50)).toBeNull();
    const { evicted, grants } = s.markDown('a');
    expect(evicted.sort()).toEqual(['r1', 'r3']);
    expect(grants).toEqual([]);
    expect(s.waiting().slice(0, 2).sort()).toEqual(['r1', 'r3']);
    expect(s.waiting()[2]).toBe('r5');
    const moved = s.release('r2');
    expect(moved).toHaveLength(1);
    expect(['r1', 'r3']).toContain(moved[0].rolloutId);
    expect(moved[0].engineId).toBe('b');
    const back = s.markUp('a');
    expect(back.map((g) => g.engineId)).toEqual(['a', 'a']);
    expect(s.stats.evicted).toBe(2);
  });
});

describe('RolloutScheduler baselines', () => {
  it('least-requests and round-robin never wait and count overflows', () => {
    for (const policy of ['least-requests', 'round-robin'] as const) {
      const s = new RolloutScheduler(policy, [{ id: 'a', capacity: 100 }, { id: 'b', capacity: 100 }]);
      for (let i = 0; i < 6; i++) expect(s.acquire(`r${i}`, 60)).not.toBeNull();
      expect(s.stats.overflows).toBe(4);
      expect(s.waiting()).toEqual([]);
    }
  });

  it('least-requests follows the outstanding-request counts', () => {
    const s = new RolloutScheduler('least-requests', [{ id: 'a', capacity: 100 }, { id: 'b', capacity: 100 }]);
    s.requestStarted('a');
    expect(s.acquire('r1', 1)?.engineId).toBe('b');
    s.requestStarted('b');
    s.requestStarted('b');
    s.requestEnded('a');
    expect(s.acquire('r2', 1)?.engineId).toBe('a');
  });
});

describe('RolloutScheduler (kv-adaptive)', () => {
  it('admits by the projected KV peak: a short rollout that ends before a long one peaks shares its engine', () => {
    const s = new RolloutScheduler('kv-adaptive', [{ id: 'a', capacity: 300 }]);
    expect(s.observe('a', { kvUsedTokens: 0, retractions: 0 }, 0)).toEqual([]); // baseline
    expect(s.acquire('L1', 250, false, 10)?.engineId).toBe('a');
    // Reservation would need 250 + 60 = 310 > 300; the short one is gone after 50 steps, the peak stays 250 (+1 per rollout for the next step).
    expect(s.acquire('S1', 60, false, 10)?.engineId).toBe('a');
    expect(s.acquire('L2', 250, false, 10)).toBeNull(); // two long ones would reach 500
    expect(s.acquire('S2', 60, false, 10)).toBeNull(); // waiters go first
    s.requestStarted('a', { rolloutId: 'L1', inputTokens: 10, maxNewTokens: 240, at: 0 });
    s.requestStarted('a', { rolloutId: 'S1', inputTokens: 10, maxNewTokens: 50, at: 0 });
    // At 1 s the engine holds 60 + 60 tokens: 0.05 steps/ms. L2 still does not fit beside L1 (70 + 2 x 190 = 450); S2 does.
    const grants = s.observe('a', { kvUsedTokens: 120, retractions: 0 }, 1000);
    expect(grants.map((g) => g.rolloutId)).toEqual(['S2']);
    expect(s.waiting()).toEqual(['L2']);
    expect(s.requestEnded('a', { rolloutId: 'S1', generatedTokens: 50, at: 1000 })).toEqual([]);
    s.release('S1', { promptTokens: 10, peakTokens: 60 });
    expect(s.release('L1', { promptTokens: 10, peakTokens: 250 }).map((g) => g.rolloutId)).toEqual(['L2']);
    expect(s.stats.overflows).toBeGreaterThan(0); // reservations exceeded the capacity, the KV never did
  });

  it('serves the longest waiter first (LPT), and backs off below 1 when the engine retracts anyway', () => {
    const s = new RolloutScheduler('kv-adaptive', [{ id: 'a', capacity: 301 }]);
    s.observe('a', { kvUsedTokens: 0, retractions: 0 }, 0);
    expect(s.acquire('A', 300)?.engineId).toBe('a');
    expect(s.acquire('S', 50)).toBeNull();
    expect(s.acquire('L', 250)).toBeNull();
    expect(s.release('A').map((g) => g.rolloutId)).toEqual(['L', 'S']);
    s.observe('a', { kvUsedTokens: 250, retractions: 3 }, 10);
    expect(s.snapshot()[0].admitFactor).toBe(DEFAULT_ADMISSION.backoff);
    expect(s.stats).toMatchObject({ retractions: 3, backoffs: 1 });
  });

  it('stays plain reservation while finished rollouts held their whole reservation', () => {
    const s = new RolloutScheduler('kv-adaptive', [{ id: 'a', capacity: 100 }]);
    s.observe('a', { kvUsedTokens: 0, retractions: 0 });
    for (let i = 0; i < 8; i++) {
      s.acquire(`f${i}`, 40);
      s.release(`f${i}`, { promptTokens: 40, peakTokens: 40 });
    }
    s.acquire('r1', 60);
    expect(s.acquire('r2', 60)).toBeNull();
    expect(s.observe('a', { kvUsedTokens: 5, retractions: 0 })).toEqual([]);
    expect(s.snapshot()[0].admitFactor).toBe(1);
  });

  it('other policies count retractions but keep their rules', () => {
    const s = new RolloutScheduler('kv-budget', [{ id: 'a', capacity: 100 }]);
    s.observe('a', { kvUsedTokens: 0, retractions: 1 });
    s.observe('a', { kvUsedTokens: 0, retractions: 4 });
    expect(s.stats.retractions).toBe(3);
    expect(s.snapshot()[0].admitFactor).toBeUndefined();
  });
});
