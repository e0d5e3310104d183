import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ablationCsv, meanCurve, summarizeArms, writeAblationReport, type ArmCurves } from './ablation.report';

const arm = (a: 'roc' | 'grpo', seed: number, pos: Array<number | null>, pass: number[]): ArmCurves => ({
  arm: a, seed, toolErrorRatioPositive: pos, toolErrorRatioPositiveKept: pos.map((v) => (v === null ? null : v / 2)), toolErrorRatioAll: pos.map((v) => (v === null ? null : v + 0.1)), passRate: pass,
});

describe('ablation report', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rstar-ablation-report-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const arms = [arm('roc', 1, [0.4, 0.2, 0.1, 0], [0.5, 0.5, 0.6, 0.6]), arm('roc', 2, [0.2, null, 0.1, 0.1], [0.4, 0.4, 0.4, 0.5]), arm('grpo', 1, [0.4, 0.4, 0.3, 0.3], [0.5, 0.5, 0.5, 0.6])];

  it('given two seeds with a missing step, the mean curve averages what is there per step', () => {
    expect(meanCurve(arms.filter((a) => a.arm === 'roc'), 'toolErrorRatioPositive')).toEqual([0.30000000000000004, 0.2, 0.1, 0.05]);
  });

  it('summarizes over all steps and over the last K steps, pooled over seeds, ignoring nulls', () => {
    const s = summarizeArms(arms.filter((a) => a.arm === 'roc'), 2);
    expect(s.toolErrorRatioPositive.all).toBeCloseTo((0.4 + 0.2 + 0.1 + 0 + 0.2 + 0.1 + 0.1) / 7, 12);
    expect(s.toolErrorRatioPositive.lastK).toBeCloseTo((0.1 + 0 + 0.1 + 0.1) / 4, 12);
    expect(s.passRate.lastK).toBeCloseTo((0.6 + 0.6 + 0.4 + 0.5) / 4, 12);
    expect(summarizeArms([], 2).passRate).toEqual({ all: null, lastK: null });
  });

  it('writes a long-form CSV (per seed and arm, plus the per-step mean), the JSON and three SVG charts', () => {
    const csv = ablationCsv(arms).trim().split('\n');
    expect(csv[0]).toBe('seed,arm,step,toolErrorRatioPositive,toolErrorRatioPositiveKept,toolErrorRatioAll,passRate');
    expect(csv).toHaveLength(1 + 3 * 4 + 2 * 4);
    expect(csv).toContain('2,roc,1,,,,0.4');
    expect(csv).toContain('mean,grpo,3,0.3,0.15,0.4,0.6');
    const files = writeAblationReport(dir, arms, { lastK: 2 });
    expect(files.map((f) => f.slice(dir.length + 1)).sort()).toEqual(['ablation.csv', 'ablation.json', 'pass-rate.svg', 'tool-error-ratio-all.svg', 'tool-error-ratio-positive.svg']);
    const json = JSON.parse(readFileSync(join(dir, 'ablation.json'), 'utf8'));
    expect(json.lastK).toBe(2);
    expect(json.curves.grpo.passRate).toEqual([0.5, 0.5, 0.5, 0.6]);
    const svg = readFileSync(join(dir, 'tool-error-ratio-positive.svg'), 'utf8');
    expect(svg).toContain('GRPO-RoC (kept)');
    expect(svg).toContain('plain GRPO');
  });
});
