import type { EvaluationPoint, StageSpan, StepMetricsRow } from '@rstar/run-views';
import type { ChartOption } from './components/chart';
import { ema } from './smoothing';

/** One curve of a chart: a metric of StepCompleted (or a function of the row). */
export interface Curve {
  label: string;
  value: (r: StepMetricsRow) => number | null;
}

/** A chart of the run page. */
export interface ChartSpec {
  id: string;
  title: string;
  yName: string;
  curves: Curve[];
  /** Fix the y axis (rates). */
  range?: [number, number];
  /** Draw the held-out pass@1 evaluations on this chart. */
  heldOut?: boolean;
  /** Stacked bars instead of lines (phase timings). */
  stacked?: boolean;
}

const m = (k: string) => (r: StepMetricsRow) => r.metrics[k] ?? null;
const s = (k: string) => (r: StepMetricsRow) => (r.metrics[k] === null || r.metrics[k] === undefined ? null : (r.metrics[k] as number) / 1000);

/** The run page's charts (each metric once; names as in metrics.csv). */
export const RUN_CHARTS: ChartSpec[] = [
  { id: 'reward', title: 'Reward and pass rate', yName: 'share', range: [0, 1], heldOut: true, curves: [{ label: 'reward (all rollouts)', value: m('rewardMean') }, { label: 'pass rate', value: m('passRate') }, { label: 'reward (kept rollouts)', value: m('rewardMeanKept') }] },
  { id: 'tool-errors', title: 'Tool-error ratio', yName: 'erroneous calls / calls', range: [0, 1], curves: [{ label: 'positive rollouts', value: m('toolErrorRatioPositive') }, { label: 'all rollouts', value: m('toolErrorRatioAll') }] },
  { id: 'length', title: 'Response length', yName: 'tokens', curves: [{ label: 'all rollouts', value: m('responseLengthMean') }, { label: 'kept rollouts', value: m('responseLengthKeptMean') }] },
  { id: 'dropped', title: 'Dropped groups', yName: 'share of groups', range: [0, 1], curves: [{ label: 'all equal', value: m('allEqualGroupShare') }, { label: 'timed out', value: m('timeoutGroupShare') }] },
  { id: 'clip', title: 'Clip fraction', yName: 'share of tokens', curves: [{ label: 'clip fraction', value: m('clipFraction') }] },
  { id: 'kl', title: 'KL / logprob drift and entropy', yName: 'nats', curves: [{ label: 'approx. KL (old‖new)', value: m('approxKl') }, { label: 'entropy', value: m('entropy') }] },
  { id: 'loss', title: 'Loss and gradient norm', yName: 'value', curves: [{ label: 'loss', value: m('loss') }, { label: 'grad norm', value: m('gradNorm') }] },
  { id: 'timings', title: 'Step phase timings', yName: 'seconds', stacked: true, curves: [{ label: 'rollouts', value: s('timeRolloutsMs') }, { label: 'train', value: s('timeTrainMs') }, { label: 'checkpoint', value: s('timeCheckpointMs') }, { label: 'sync', value: s('timeSyncMs') }] },
];

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2'];
const BANDS = ['rgba(37,99,235,0.05)', 'rgba(217,119,6,0.07)'];

/**
 * The chart's curves with their values, each distinct curve once: a curve equal to an earlier one at
 * every step is folded into it (`reward (all rollouts) = pass rate`, as with a binary reward), a curve
 * with no value at all is left out.
 */
export function distinctCurves(curves: readonly Curve[], rows: readonly StepMetricsRow[]): Array<{ c: Curve; raw: Array<number | null> }> {
  const out: Array<{ c: Curve; raw: Array<number | null>; key: string }> = [];
  for (const c of curves) {
    const raw = rows.map((r) => c.value(r));
    if (rows.length > 0 && raw.every((v) => v === null)) continue;
    const key = JSON.stringify(raw.map((v) => (v === null ? null : Math.round(v * 1e9))));
    const same = out.find((o) => o.key === key);
    if (same) same.c = { ...same.c, label: `${same.c.label} = ${c.label}` };
    else out.push({ c, raw, key });
  }
  return out.map(({ c, raw }) => ({ c, raw }));
}

/** Whether the run recorded any value of the chart's curves (charts without data are listed, not drawn). */
export function hasData(spec: ChartSpec, rows: readonly StepMetricsRow[]): boolean {
  return rows.some((r) => spec.curves.some((c) => c.value(r) !== null));
}

/**
 * The ECharts option of one chart: integer step ticks, one band and label per stage, each curve once
 * (smoothed with {@link ema} when `smoothing` > 0, the raw points faded behind), and for `heldOut` charts
 * the held-out pass@1 points with a dashed marker line at each evaluation.
 */
export function chartOption(spec: ChartSpec, rows: readonly StepMetricsRow[], stages: readonly StageSpan[], evals: readonly EvaluationPoint[], smoothing: number): ChartOption {
  const done = rows.filter((r) => r.status === 'completed');
  const xs = done.map((r) => r.step);
  const maxStep = Math.max(0, ...rows.map((r) => r.step), ...stages.map((st) => st.lastStep));
  const series: Record<string, unknown>[] = [];
  const curves = distinctCurves(spec.curves, done);
  curves.forEach(({ c, raw }, i) => {
    const color = PALETTE[i % PALETTE.length];
    if (spec.stacked) {
      series.push({ name: c.label, type: 'bar', stack: 'phases', data: xs.map((x, k) => [x, raw[k]]), itemStyle: { color }, barMaxWidth: 18 });
      return;
    }
    const smooth = ema(raw, smoothing);
    series.push({
      name: c.label, type: 'line', data: xs.map((x, k) => [x, smooth[k]]), showSymbol: xs.length <= 60, symbolSize: 5, connectNulls: false,
      lineStyle: { width: 2, color }, itemStyle: { color }, emphasis: { focus: 'series' },
      ...(i === 0 ? { markArea: { silent: true, data: stages.map((st, k) => [{ xAxis: st.firstStep - 0.5, name: st.name, itemStyle: { color: BANDS[k % 2] } }, { xAxis: st.lastStep + 0.5 }]), label: { position: 'insideTop', color: '#64748b', fontSize: 11 } } } : {}),
    });
    if (smoothing > 0) series.push({ name: c.label, type: 'line', data: xs.map((x, k) => [x, raw[k]]), showSymbol: false, lineStyle: { width: 1, color, opacity: 0.25 }, itemStyle: { color }, tooltip: { show: false }, silent: true });
  });
  if (spec.heldOut && evals.length) {
    series.push({
      name: 'held-out pass@1', type: 'scatter', symbol: 'diamond', symbolSize: 12, itemStyle: { color: '#111827' },
      data: evals.map((e) => ({ value: [e.afterStep - 0.5, e.passAt1], name: `${e.name} after ${e.afterStep} steps (v${e.policyVersion}): ${(e.passAt1 * 100).toFixed(1)}% on ${e.prompts}×${e.samples}` })),
      markLine: { silent: true, symbol: 'none', lineStyle: { type: 'dashed', color: '#94a3b8' }, label: { formatter: 'eval', color: '#475569', fontSize: 10 }, data: evals.map((e) => ({ xAxis: e.afterStep - 0.5 })) },
    });
  }
  return {
    animation: false,
    grid: { left: 52, right: 16, top: 40, bottom: 32 },
    legend: { top: 4, type: 'scroll', textStyle: { fontSize: 11 }, data: [...curves.map(({ c }) => c.label), ...(spec.heldOut && evals.length ? ['held-out pass@1'] : [])] },
    tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => (typeof v === 'number' ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3)) : '-') },
    xAxis: {
      type: 'value', name: 'step', nameLocation: 'end', nameGap: 6, min: -0.5, max: maxStep + 0.5, minInterval: 1,
      axisLabel: { formatter: (v: number) => (Number.isInteger(v) ? String(v) : '') }, splitLine: { show: false },
    },
    yAxis: { type: 'value', name: spec.yName, nameLocation: 'middle', nameGap: 38, nameTextStyle: { fontSize: 10, color: '#64748b' }, ...(spec.range ? { min: spec.range[0], max: spec.range[1] } : spec.stacked ? { min: 0 } : { scale: true }) },
    series,
  };
}
