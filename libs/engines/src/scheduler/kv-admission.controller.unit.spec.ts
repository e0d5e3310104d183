import { describe, expect, it } from 'vitest';
import { admissionCeiling, DEFAULT_ADMISSION, INITIAL_ADMISSION, nextAdmission } from './kv-admission.controller';

const go = { saturated: true, turnedOver: true, ceiling: 4 };

describe('nextAdmission (kv-adaptive feedback)', () => {
  it('takes the first sample as the baseline, and re-baselines when the counter went down (engine restart)', () => {
    const a = nextAdmission(INITIAL_ADMISSION, { usedShare: 0.1, retractions: 5 }, go);
    expect(a).toEqual({ state: { factor: 1, retractions: 5, usedShare: 0.1 }, move: 'baseline' });
    expect(nextAdmission({ factor: 2, retractions: 9, usedShare: 0.5 }, { usedShare: 0, retractions: 0 }, go).move).toBe('baseline');
  });

  it('grows below the target, saturated, turned over and settled, tapered by usage and capped by the ceiling', () => {
    const s = { factor: 1, retractions: 0, usedShare: 0.2 };
    const g = nextAdmission(s, { usedShare: 0.2, retractions: 0 }, go);
    expect(g.move).toBe('grow');
    expect(g.state.factor).toBeCloseTo(1 + DEFAULT_ADMISSION.growth * (1 - 0.2 / 0.8));
    expect(nextAdmission(s, { usedShare: 0.2, retractions: 0 }, { ...go, ceiling: 1.01 }).state.factor).toBeCloseTo(1.01);
    for (const ctx of [{ ...go, saturated: false }, { ...go, turnedOver: false }, { ...go, ceiling: 1 }]) {
      expect(nextAdmission(s, { usedShare: 0.2, retractions: 0 }, ctx).move).toBe('hold');
    }
    // Usage still rising fast (admitted KV materialising) or at the target: hold.
    expect(nextAdmission(s, { usedShare: 0.45, retractions: 0 }, go).move).toBe('hold');
    expect(nextAdmission({ ...s, usedShare: 0.8 }, { usedShare: 0.85, retractions: 0 }, go).move).toBe('hold');
  });

  it('backs off on a new retraction (down to minFactor), trims overcommit at the high-water mark (down to 1)', () => {
    const s = { factor: 3, retractions: 4, usedShare: 0.5 };
    expect(nextAdmission(s, { usedShare: 0.5, retractions: 5 }, go)).toMatchObject({ move: 'backoff', state: { factor: 1.5 } });
    expect(nextAdmission(s, { usedShare: 0.96, retractions: 4 }, go)).toMatchObject({ move: 'trim', state: { factor: 2.7 } });
    expect(nextAdmission({ ...s, factor: 1.05 }, { usedShare: 0.96, retractions: 4 }, go)).toMatchObject({ move: 'trim', state: { factor: 1 } });
    // At factor 1 a full engine is what the projection aims at: no trim.
    expect(nextAdmission({ ...s, factor: 1 }, { usedShare: 0.99, retractions: 4 }, go).move).toBe('hold');
    // A retraction at factor 1 means the projection was off: below 1, never below minFactor.
    expect(nextAdmission({ ...s, factor: 1 }, { usedShare: 0.5, retractions: 6 }, go).state.factor).toBe(0.5);
    expect(nextAdmission({ ...s, factor: 0.5 }, { usedShare: 0.5, retractions: 6 }, go).state.factor).toBe(DEFAULT_ADMISSION.minFactor);
  });

  it('below 1 it grows back by the full step whatever the usage, up to 1 when no overcommit is allowed', () => {
    const s = { factor: 0.5, retractions: 6, usedShare: 0.9 };
    const g = nextAdmission(s, { usedShare: 0.9, retractions: 6 }, { ...go, ceiling: 1 });
    expect(g).toMatchObject({ move: 'grow', state: { factor: 0.5 + DEFAULT_ADMISSION.growth } });
    expect(nextAdmission({ ...s, factor: 0.95 }, { usedShare: 0.9, retractions: 6 }, { ...go, ceiling: 1 }).state.factor).toBe(1);
  });
});

describe('admissionCeiling', () => {
  it('is plain reservation until enough rollouts finished, then 1 / the 90th percentile of their used share', () => {
    expect(admissionCeiling([0.1, 0.1])).toBe(1);
    expect(admissionCeiling(Array(10).fill(0.25))).toBe(4);
    expect(admissionCeiling([...Array(9).fill(0.3), 1])).toBe(1); // the tail runs to its budget: no overcommit
    expect(admissionCeiling(Array(20).fill(0.5))).toBe(2);
  });
});
