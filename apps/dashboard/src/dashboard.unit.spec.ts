import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { RolloutBrief, StepMetricsRow } from '@rstar/run-views';
import { parseRoute, href } from './router';
import { ema } from './smoothing';
import { chartOption, distinctCurves, RUN_CHARTS } from './run-charts';
import { mergeLive } from './pages/run.page';
import { RolloutVersions } from './pages/step.page';

const row = (step: number, metrics: Record<string, number | null>, stage = 'rl-1'): StepMetricsRow => ({
  step, stage, status: 'completed', policyVersion: step, prompts: 2, metrics, optimized: null, startedAt: null, completedAt: null,
});

describe('dashboard routes', () => {
  it('round-trips every page through its hash, ids with colons included', () => {
    const rid = 'rollout:run-1:3:0:2';
    expect(parseRoute(href.runs())).toEqual({ page: 'runs' });
    expect(parseRoute(href.run('run-1'))).toEqual({ page: 'run', runId: 'run-1', tab: 'overview' });
    expect(parseRoute(href.run('run-1', 'rollouts'))).toEqual({ page: 'run', runId: 'run-1', tab: 'rollouts' });
    expect(parseRoute(href.step('run-1', 3))).toEqual({ page: 'step', runId: 'run-1', step: 3 });
    expect(parseRoute(href.rollout('run-1', rid))).toEqual({ page: 'rollout', runId: 'run-1', rolloutId: rid });
    expect(parseRoute(href.replay('run-1', 4))).toEqual({ page: 'replay', runId: 'run-1', step: 4 });
    expect(parseRoute(href.replay('run-1'))).toEqual({ page: 'replay', runId: 'run-1', step: null });
    expect(parseRoute(href.sandbox('run-1'))).toEqual({ page: 'sandbox', runId: 'run-1' });
    expect(parseRoute('#/nowhere')).toMatchObject({ page: 'missing' });
  });
});

describe('smoothing', () => {
  it('is a bias-corrected EMA that leaves gaps alone and is the identity at weight 0', () => {
    expect(ema([1, null, 3], 0)).toEqual([1, null, 3]);
    const s = ema([1, 1, 1, null, 1], 0.9);
    expect(s.map((v) => (v === null ? null : Number(v.toFixed(9))))).toEqual([1, 1, 1, null, 1]);
    expect(ema([0, 10], 0.5)[1]).toBeCloseTo((0.5 * 0 * 0.5 + 0.5 * 10) / (1 - 0.25), 9);
  });
});

describe('run charts', () => {
  it('draws the mean reward and the pass rate once when they are equal, with integer step ticks and a band per stage', () => {
    const rows = [row(0, { rewardMean: 0.5, passRate: 0.5, rewardMeanKept: 0.7 }), row(1, { rewardMean: 0.25, passRate: 0.25, rewardMeanKept: null }, 'rl-2')];
    const spec = RUN_CHARTS.find((c) => c.id === 'reward')!;
    expect(distinctCurves(spec.curves, rows).map((d) => d.c.label)).toEqual(['reward (all rollouts) = pass rate', 'reward (kept rollouts)']);
    const o = chartOption(spec, rows, [{ name: 'rl-1', firstStep: 0, lastStep: 0 }, { name: 'rl-2', firstStep: 1, lastStep: 1 }], [{ name: 'held-out', afterStep: 0, policyVersion: 0, passAt1: 0.4, prompts: 4, samples: 1, at: null }], 0) as any;
    const lines = o.series.filter((s: any) => s.type === 'line');
    expect(lines.map((s: any) => s.name)).toEqual(['reward (all rollouts) = pass rate', 'reward (kept rollouts)']);
    expect(lines[0].markArea.data.map((d: any) => d[0].name)).toEqual(['rl-1', 'rl-2']);
    expect(o.xAxis.minInterval).toBe(1);
    expect(o.xAxis.axisLabel.formatter(2.5)).toBe('');
    expect(o.xAxis.axisLabel.formatter(2)).toBe('2');
    expect(o.series.find((s: any) => s.type === 'scatter').data[0].value).toEqual([-0.5, 0.4]);
  });

  it('merges a live update: steps replaced by number, stages recomputed, evaluations added once', () => {
    const d = { run: {} as any, config: null, stages: [{ name: 'rl-1', firstStep: 0, lastStep: 0 }], steps: [row(0, { rewardMean: 0.1 })], evaluations: [], reruns: [], cursor: '1-1' };
    const u = { runId: 'r', cursor: '2-9', run: { status: 'running' } as any, steps: [{ ...row(1, {}, 'rl-2'), status: 'running' as const }], rollouts: [], rolloutsDropped: 0, evaluations: [{ name: 'held-out', afterStep: 0, policyVersion: 0, passAt1: 0.4, prompts: 4, samples: 1, at: null }], toolCalls: 0 };
    const m = mergeLive(mergeLive(d, u), { ...u, steps: [row(1, { rewardMean: 0.3 }, 'rl-2')] });
    expect(m.steps.map((s) => [s.step, s.status, s.metrics.rewardMean ?? null])).toEqual([[0, 'completed', 0.1], [1, 'completed', 0.3]]);
    expect(m.stages).toEqual([{ name: 'rl-1', firstStep: 0, lastStep: 0 }, { name: 'rl-2', firstStep: 1, lastStep: 1 }]);
    expect(m.evaluations).toHaveLength(1);
    expect(m.cursor).toBe('2-9');
  });
});

describe("step page: each rollout's policy versions and staleness", () => {
  const brief = (over: Partial<RolloutBrief>): RolloutBrief => ({
    rolloutId: 'rollout:run-1:3:0:1', groupId: 'group:run-1:3:0', step: 3, promptIdx: 0, sampleIdx: 1, promptId: 'p0', reward: 1, correct: true, rule: 'exact',
    toolCalls: 1, toolErrors: 0, responseTokens: 12, truncated: false, finishReason: 'answer',
    policyVersion: 3, policyVersions: [3], trainedAt: 3, staleness: 0, discarded: false, status: 'kept', ...over,
  });
  const cell = (r: RolloutBrief) => renderToStaticMarkup(createElement(RolloutVersions, { r }));
  const text = (html: string) => html.replace(/<[^>]+>/g, '');

  it('shows every version that sampled a partial rollout, the trainer\'s version and the staleness, and marks it partial', () => {
    const html = cell(brief({ policyVersions: [3, 4], trainedAt: 4, staleness: 1 }));
    expect(html).toContain('data-testid="rollout-versions"');
    expect(html).toContain('data-rollout-id="rollout:run-1:3:0:1"');
    expect(html).toContain('data-partial="true"');
    expect(text(html)).toBe('v3→v4 · trained at v4 · staleness 1 partial');
  });

  it('a rollout of one version is not marked partial; a stale discard, an untrained step and a running rollout say so', () => {
    const one = cell(brief({}));
    expect(text(one)).toBe('v3 · trained at v3 · staleness 0');
    expect(one).not.toContain('data-partial');
    expect(text(cell(brief({ policyVersion: 1, policyVersions: [1], trainedAt: 4, staleness: 3, discarded: true })))).toBe('v1 · discarded at v4 · staleness 3 stale');
    expect(text(cell(brief({ trainedAt: null, staleness: null })))).toBe('v3 · not trained yet');
    expect(text(cell(brief({ policyVersion: null, policyVersions: null, trainedAt: null, staleness: null, status: 'pending' })))).toBe('-');
  });
});
