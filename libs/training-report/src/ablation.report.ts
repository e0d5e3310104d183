import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lineChartSvg, type PlotSeries } from './svg.plot';

/** The per-step curves of one ablation arm (one seed); null = no value that step (e.g. no positive rollout with a call). */
export interface ArmCurves {
  arm: 'roc' | 'grpo';
  seed: number;
  /** Tool-error ratio (erroneous / all calls) in positive (reward 1) sampled rollouts. */
  toolErrorRatioPositive: Array<number | null>;
  /** The same over the positives kept for training. */
  toolErrorRatioPositiveKept: Array<number | null>;
  /** Tool-error ratio over all sampled rollouts. */
  toolErrorRatioAll: Array<number | null>;
  /** Share of sampled rollouts with reward 1. */
  passRate: Array<number | null>;
}

export const ABLATION_METRICS = ['toolErrorRatioPositive', 'toolErrorRatioPositiveKept', 'toolErrorRatioAll', 'passRate'] as const;
export type AblationMetric = (typeof ABLATION_METRICS)[number];

/** Mean of a metric per arm: over all steps and over the last K steps. */
export type ArmSummary = Record<AblationMetric, { all: number | null; lastK: number | null }>;

/** Mean of the non-null values (null when there are none). */
export function meanOf(xs: ReadonlyArray<number | null | undefined>): number | null {
  const v = xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
}

/** Per-step mean over the given arms (seeds) of one metric; length = the longest arm. */
export function meanCurve(arms: readonly ArmCurves[], key: AblationMetric): Array<number | null> {
  const steps = Math.max(0, ...arms.map((a) => a[key].length));
  return Array.from({ length: steps }, (_, i) => meanOf(arms.map((a) => a[key][i])));
}

/** Means over all steps and over the last `lastK` steps, pooled over the given arms' steps. */
export function summarizeArms(arms: readonly ArmCurves[], lastK: number): ArmSummary {
  const out = {} as ArmSummary;
  for (const k of ABLATION_METRICS) out[k] = { all: meanOf(arms.flatMap((a) => a[k])), lastK: meanOf(arms.flatMap((a) => a[k].slice(-lastK))) };
  return out;
}

const cell = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));

/**
 * The ablation's CSV in long form: one row per (seed, arm, step) and, with seed `mean`, the per-step mean
 * over seeds of each arm. Columns: seed, arm, step, then {@link ABLATION_METRICS}.
 */
export function ablationCsv(arms: readonly ArmCurves[]): string {
  const lines = [['seed', 'arm', 'step', ...ABLATION_METRICS].join(',')];
  const row = (seed: string, arm: string, curves: Record<AblationMetric, Array<number | null>>) => {
    const steps = Math.max(...ABLATION_METRICS.map((k) => curves[k].length));
    for (let i = 0; i < steps; i++) lines.push([seed, arm, String(i), ...ABLATION_METRICS.map((k) => cell(curves[k][i]))].join(','));
  };
  for (const a of arms) row(String(a.seed), a.arm, a);
  for (const arm of ['roc', 'grpo'] as const) {
    const mine = arms.filter((a) => a.arm === arm);
    if (mine.length) row('mean', arm, Object.fromEntries(ABLATION_METRICS.map((k) => [k, meanCurve(mine, k)])) as Record<AblationMetric, Array<number | null>>);
  }
  return lines.join('\n') + '\n';
}

const LABEL = { roc: 'GRPO-RoC', grpo: 'plain GRPO' } as const;

/**
 * Write the ablation report into `dir`: `ablation.json` (`summary` plus anything in `extra`),
 * `ablation.csv` ({@link ablationCsv}) and SVG curves (mean over seeds, per step, per arm):
 * `tool-error-ratio-positive.svg` (sampled and kept positives), `tool-error-ratio-all.svg`, `pass-rate.svg`.
 * Returns the file paths.
 */
export function writeAblationReport(dir: string, arms: readonly ArmCurves[], extra: Record<string, unknown>): string[] {
  mkdirSync(dir, { recursive: true });
  const seeds = [...new Set(arms.map((a) => a.seed))].join(',');
  const curve = (arm: 'roc' | 'grpo', key: AblationMetric, suffix = ''): PlotSeries => ({
    label: LABEL[arm] + suffix, points: meanCurve(arms.filter((a) => a.arm === arm), key).map((y, x) => ({ x, y })),
  });
  const chart = (title: string, yLabel: string, series: PlotSeries[]) =>
    lineChartSvg({ title: `${title} (mean over seeds ${seeds})`, xLabel: 'RL step', yLabel, yRange: [0, 1], series });
  const files: Record<string, string> = {
    'ablation.json': JSON.stringify({ ...extra, curves: Object.fromEntries((['roc', 'grpo'] as const).map((arm) => [arm, Object.fromEntries(ABLATION_METRICS.map((k) => [k, meanCurve(arms.filter((a) => a.arm === arm), k)]))])), arms }, null, 2) + '\n',
    'ablation.csv': ablationCsv(arms),
    'tool-error-ratio-positive.svg': chart('Tool-error ratio in positive rollouts', 'erroneous calls / calls', [
      curve('roc', 'toolErrorRatioPositive'), curve('grpo', 'toolErrorRatioPositive'), curve('roc', 'toolErrorRatioPositiveKept', ' (kept)'), curve('grpo', 'toolErrorRatioPositiveKept', ' (kept)'),
    ]),
    'tool-error-ratio-all.svg': chart('Tool-error ratio in all rollouts', 'erroneous calls / calls', [curve('roc', 'toolErrorRatioAll'), curve('grpo', 'toolErrorRatioAll')]),
    'pass-rate.svg': chart('Pass rate of sampled rollouts', 'share with reward 1', [curve('roc', 'passRate'), curve('grpo', 'passRate')]),
  };
  return Object.entries(files).map(([name, text]) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  });
}
