import { describe, expect, it } from 'vitest';
import { metricsCsv } from './run.report';
import { lineChartSvg } from './svg.plot';

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
});
