import { describe, expect, it } from 'vitest';
import { WeightProbeError, compareProbe, defaultProbeTolerance, probeTokens } from './probe.check';

describe('behaviour probe', () => {
  it('the probe is fixed, inside the vocabulary and avoids ids 0-2', () => {
    const a = probeTokens(500, 32);
    expect(a).toEqual(probeTokens(500, 32));
    expect(a).toHaveLength(32);
    expect(Math.min(...a)).toBeGreaterThanOrEqual(3);
    expect(Math.max(...a)).toBeLessThan(500);
    expect(new Set(a).size).toBeGreaterThan(20);
  });

  it('finds the worst token and fails beyond the tolerance, naming engine, version and token', () => {
    const tokenIds = [5, 6, 7, 8];
    const ok = compareProbe({ engineId: 'e0', sync: 'distributed', version: 3, tokenIds, trainer: [-1, -2, -3], engine: [-1, -2.00001, -3], tolerance: 1e-4 });
    expect(ok.passed).toBe(true);
    expect(ok.worst).toEqual({ position: 2, tokenId: 7, trainer: -2, engine: -2.00001 });
    const bad = compareProbe({ engineId: 'e1', sync: 'disk', version: 4, tokenIds, trainer: [-1, -2, -3], engine: [-1, -2, -3.5], tolerance: 0.1 });
    expect(bad.passed).toBe(false);
    expect(bad.maxAbsDiff).toBeCloseTo(0.5);
    expect(bad.meanAbsDiff).toBeCloseTo(0.5 / 3);
    const msg = new WeightProbeError(bad).message;
    expect(msg).toContain('engine e1');
    expect(msg).toContain('policy version 4');
    expect(msg).toContain('token 8');
    expect(() => compareProbe({ engineId: 'e', sync: 'disk', version: 0, tokenIds, trainer: [-1], engine: [-1], tolerance: 1 })).toThrow(RangeError);
  });

  it('default tolerance follows the wire dtype unless configured', () => {
    expect(defaultProbeTolerance('float32')).toBe(1e-3);
    expect(defaultProbeTolerance('bfloat16')).toBe(0.15);
    expect(defaultProbeTolerance('bfloat16', 0.05)).toBe(0.05);
  });
});
