import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '@rstar/contracts';
import { metricsCsv, writeRunReport } from './run.report';
import { dedupeSeries, integerTicks, lineChartSvg } from './svg.plot';
import type { RunResult } from './run.result';

describe('metricsCsv', () => {
  it('writes one row per step, the key columns first, empty cells for missing values', () => {
    const csv = metricsCsv([
      { step: 0, stage: 'rl-1', metrics: { rewardMean: 0.25, passRate: 0.25, loss: null, zeta: 1 } },
      { step: 1, stage: 'rl-1', metrics: { rewardMean: 0.5, passRate: 0.5, loss: -0.01 } },
    ]);
    const [header, r0, r1] = csv.trim().split('\n');
    expect(header).toBe('step,stage,rewardMean,passRate,loss,zeta');
    expect(r0).toBe('0,rl-1,0.25,0.25,,1');
    expect(r1).toBe('1,rl-1,0.5,0.5,-0.01,');
  });
});

describe('lineChartSvg', () => {
  it('draws one polyline per unbroken run of values and a legend entry per series', () => {
    const svg = lineChartSvg({
      title: 'T <1>', xLabel: 'step', yLabel: 'y', yRange: [0, 1],
      series: [
        { label: 'a', points: [{ x: 0, y: 0.1 }, { x: 1, y: 0.2 }, { x: 2, y: null }, { x: 3, y: 0.4 }, { x: 4, y: 0.5 }] },
        { label: 'b', points: [{ x: 0, y: 1 }] },
      ],
    });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('T &lt;1&gt;');
    expect(svg.match(/<polyline/g)?.length).toBe(2);
    expect(svg.match(/<circle/g)?.length).toBe(5);
    expect(svg).toContain('>a</text>');
    expect(svg).toContain('>b</text>');
  });

  it('labels integer steps only (no 4.75), with a band and a name per stage and the held-out marks', () => {
    const points = Array.from({ length: 20 }, (_, x) => ({ x, y: x / 20 }));
    const svg = lineChartSvg({
      title: 't', xLabel: 'step', yLabel: 'y', series: [{ label: 'r', points }],
      stages: [{ name: 'rl-1', first: 0, last: 11 }, { name: 'rl-2', first: 12, last: 19 }], marks: [{ x: -0.5, y: 0.3, label: '30.0%' }, { x: 19.5, y: 0.4, label: '40.0%' }],
    });
    const xLabels = [...svg.matchAll(/<text x="[\d.]+" y="(\d+(?:\.\d+)?)" text-anchor="middle">([^<]+)<\/text>/g)].filter((m) => Number(m[1]) === 360 - 48 + 16).map((m) => m[2]);
    expect(xLabels.length).toBeGreaterThan(3);
    for (const l of xLabels) expect(l).toMatch(/^\d+$/);
    expect(svg).toContain('>rl-1</text>');
    expect(svg).toContain('>rl-2</text>');
    expect(svg).toContain('stroke-dasharray'); // the boundary between the stages
    expect(svg).toContain('>30.0%</text>');
    expect(svg).toContain('>held-out pass@1</text>');
  });

  it('integerTicks picks 1-2-5 steps within the count', () => {
    expect(integerTicks(-0.5, 19.5)).toEqual([0, 5, 10, 15]);
    expect(integerTicks(-0.5, 1.5)).toEqual([0, 1]);
    expect(integerTicks(-0.5, 499.5)).toEqual([0, 100, 200, 300, 400]);
  });

  it('dedupeSeries draws a curve once and names both (mean reward = pass rate with a binary reward)', () => {
    const pts = [{ x: 0, y: 0.5 }, { x: 1, y: 0.25 }];
    const out = dedupeSeries([{ label: 'reward', points: pts }, { label: 'pass rate', points: pts.map((p) => ({ ...p })) }, { label: 'kept', points: [{ x: 0, y: 1 }, { x: 1, y: null }] }, { label: 'none', points: [{ x: 0, y: null }] }]);
    expect(out.map((s) => s.label)).toEqual(['reward = pass rate', 'kept']);
  });
});

describe('writeRunReport', () => {
  it('writes the CSV/JSON and a plot per recorded metric: reward, tool errors, length, loss, KL, entropy, clip fraction', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rstar-report-'));
    try {
      const config = parseRunConfig({ name: 't', stages: [{ name: 'rl-1', steps: 2, promptsPerStep: 1, maxResponseTokens: 16, lr: 1e-3 }, { name: 'rl-2', steps: 1, promptsPerStep: 1, maxResponseTokens: 16, lr: 1e-3 }] });
      const m = (i: number) => ({ rewardMean: i / 4, passRate: i / 4, rewardMeanKept: 0.5, toolErrorRatioPositive: 0.1, toolErrorRatioAll: 0.2, responseLengthMean: 50 + i, loss: -0.01 * i, approxKl: 0.001 * i, entropy: 1 - i / 10, clipFraction: 0.05, entropyMissing: null });
      const r = {
        runId: 'r', outDir: dir, mode: 'standalone', config, sft: null, passAt1Before: null, passAt1After: null, policyVersion: 3,
        evaluations: [{ name: 'held-out', afterStep: 0, policyVersion: 0, passAt1: 0.3, prompts: 4, samples: 1 }, { name: 'held-out', afterStep: 3, policyVersion: 3, passAt1: 0.4, prompts: 4, samples: 1 }],
        steps: [0, 1, 2].map((i) => ({ step: i, stage: i < 2 ? 'rl-1' : 'rl-2', metrics: m(i) })),
        seconds: { sft: 0, evalBefore: 0, rl: 0, evalAfter: 0, total: 0 },
      } as RunResult;
      const files = writeRunReport(dir, r).map((f) => f.slice(dir.length + 1));
      expect(files.sort()).toEqual(['clip-fraction.svg', 'entropy.svg', 'kl.svg', 'loss.svg', 'metrics.csv', 'metrics.json', 'response-length.svg', 'reward.svg', 'tool-error-ratio.svg']);
      const reward = readFileSync(join(dir, 'reward.svg'), 'utf8');
      expect(reward).toContain('reward, all rollouts = pass rate');
      expect(reward.match(/<polyline/g)?.length).toBe(2);
      expect(reward).toContain('>40.0%</text>');
      expect(readdirSync(dir)).not.toContain('pass-rate.svg');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
