import { describe, expect, it } from 'vitest';
import { generatedBy, projectedPeak, stepRateFromUsage } from './kv-projection';

/** The peak by stepping the engine token by token (the definition the closed form must match). */
function peakBySteps(rs: { kv: number; remaining: number }[]): number {
  let peak = 0;
  for (let t = 0; t <= Math.max(0, ...rs.map((r) => r.remaining)); t++) {
    peak = Math.max(peak, rs.filter((r) => r.remaining >= t).reduce((s, r) => s + r.kv + t, 0));
  }
  return peak;
}

describe('projectedPeak', () => {
  it('is the reservation for one rollout, and less than the sum of reservations when short ones end before long ones peak', () => {
    expect(projectedPeak([])).toBe(0);
    expect(projectedPeak([{ kv: 30, remaining: 200 }])).toBe(230);
    // Three long (30 + 200) and six short (30 + 40): reservation 1110, the short ones are gone by step 41.
    const mix = [...Array.from({ length: 3 }, () => ({ kv: 30, remaining: 200 })), ...Array.from({ length: 6 }, () => ({ kv: 30, remaining: 40 }))];
    expect(projectedPeak(mix)).toBe(690);
    expect(projectedPeak(mix)).toBeLessThan(3 * 230 + 6 * 70 - 400);
  });

  it('matches stepping the engine token by token on seeded random mixes', () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let k = 0; k < 50; k++) {
      const rs = Array.from({ length: 1 + Math.floor(rand() * 12) }, () => ({ kv: Math.floor(rand() * 300), remaining: Math.floor(rand() * 250) }));
      expect(projectedPeak(rs)).toBe(peakBySteps(rs));
    }
  });
});

describe('stepRateFromUsage', () => {
  const reqs = [
    { inputTokens: 30, maxNewTokens: 200, startedAt: 0 },
    { inputTokens: 30, maxNewTokens: 40, startedAt: 500 },
  ];
  it('finds the decode rate at which the requests hold what the engine reports', () => {
    // At 0.1 step/ms, by t = 1000 the first generated 100 tokens and the second its 40 (capped): 30 + 100 + 30 + 40 = 200.
    const k = stepRateFromUsage(reqs, 200, 1000) as number;
    expect(k).toBeCloseTo(0.1, 2);
    expect(generatedBy(reqs[0], k, 1000)).toBe(100);
  });

  it('returns 0 when nothing was decoded yet, the all-done rate past that, null with no request old enough', () => {
    expect(stepRateFromUsage(reqs, 60, 1000)).toBe(0);
    const all = stepRateFromUsage(reqs, 10_000, 1000) as number;
    expect(reqs.every((r) => generatedBy(r, all, 1000) === r.maxNewTokens)).toBe(true);
    expect(stepRateFromUsage([], 100, 1000)).toBeNull();
    expect(stepRateFromUsage([{ inputTokens: 5, maxNewTokens: 5, startedAt: 1000 }], 100, 1000)).toBeNull();
  });
});
