import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainingResult } from '../training.run';
import { lineChartSvg, type PlotSeries } from './svg.plot';

/** Metrics columns written first in metrics.csv (the rest follow alphabetically). */
const FIRST = ['step', 'stage', 'rewardMean', 'passRate', 'toolErrorRatioPositive', 'toolErrorRatioAll', 'droppedGroupShare', 'loss', 'clipFraction'];

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Rows of per-step metrics as CSV text (header + one line per step; empty cell = no value). */
export function metricsCsv(steps: TrainingResult['steps']): string {
  const keys = new Set<string>();
  for (const s of steps) Object.keys(s.metrics).forEach((k) => keys.add(k));
  const cols = [...FIRST.filter((c) => c === 'step' || c === 'stage' || keys.has(c)), ...[...keys].filter((k) => !FIRST.includes(k)).sort()];
  const lines = [cols.join(',')];
  for (const s of steps) lines.push(cols.map((c) => csvCell(c === 'step' ? s.step : c === 'stage' ? s.stage : s.metrics[c])).join(','));
  return lines.join('\n') + '\n';
}

const series = (steps: TrainingResult['steps'], key: string, label = key): PlotSeries => ({ label, points: steps.map((s) => ({ x: s.step, y: s.metrics[key] ?? null })) });

/**
 * Write a run's report folder: `metrics.csv` and `metrics.json` (per-step metrics, pass@1 before/after,
 * timings), and SVG plots of reward, pass rate and tool-error ratio per step. Returns the file paths.
 */
export function writeRunReport(dir: string, r: TrainingResult): string[] {
  mkdirSync(dir, { recursive: true });
  const files: Record<string, string> = {
    'metrics.csv': metricsCsv(r.steps),
    'metrics.json': JSON.stringify(
      {
        runId: r.runId, mode: r.mode, config: r.config.name, seed: r.config.seed, policyVersion: r.policyVersion, seconds: r.seconds, sft: r.sft,
        passAt1: { before: r.passAt1Before?.passAt1 ?? null, after: r.passAt1After?.passAt1 ?? null, heldOut: r.passAt1Before?.prompts ?? null, samples: r.config.eval.samples },
        evalBefore: r.passAt1Before, evalAfter: r.passAt1After, steps: r.steps,
      },
      null, 2,
    ) + '\n',
    'reward.svg': lineChartSvg({ title: 'Reward per step', xLabel: 'RL step', yLabel: 'mean reward', yRange: [0, 1], series: [series(r.steps, 'rewardMean', 'all rollouts'), series(r.steps, 'rewardMeanKept', 'kept rollouts')] }),
    'pass-rate.svg': lineChartSvg({
      title: `Pass rate per step (held-out pass@1 ${fmtPct(r.passAt1Before?.passAt1)} -> ${fmtPct(r.passAt1After?.passAt1)})`, xLabel: 'RL step', yLabel: 'pass rate', yRange: [0, 1],
      series: [series(r.steps, 'passRate', 'training rollouts')],
    }),
    'tool-error-ratio.svg': lineChartSvg({
      title: 'Tool-error ratio per step', xLabel: 'RL step', yLabel: 'erroneous calls / calls', yRange: [0, 1],
      series: [series(r.steps, 'toolErrorRatioPositive', 'positive rollouts'), series(r.steps, 'toolErrorRatioAll', 'all rollouts')],
    }),
  };
  return Object.entries(files).map(([name, text]) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  });
}

/** `12.5%` or `n/a`. */
export function fmtPct(v: number | null | undefined): string {
  return v === null || v === undefined ? 'n/a' : `${(v * 100).toFixed(1)}%`;
}
