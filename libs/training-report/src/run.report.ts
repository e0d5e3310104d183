import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunResult, StepRecord } from './run.result';
import { dedupeSeries, lineChartSvg, type PlotMark, type PlotSeries, type PlotStage } from './svg.plot';

/** Metrics columns written first in metrics.csv (the rest follow alphabetically). */
const FIRST = ['step', 'stage', 'rewardMean', 'passRate', 'toolErrorRatioPositive', 'toolErrorRatioAll', 'droppedGroupShare', 'loss', 'clipFraction'];

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Rows of per-step metrics as CSV text (header + one line per step; empty cell = no value). */
export function metricsCsv(steps: StepRecord[]): string {
  const keys = new Set<string>();
  for (const s of steps) Object.keys(s.metrics).forEach((k) => keys.add(k));
  const cols = [...FIRST.filter((c) => c === 'step' || c === 'stage' || keys.has(c)), ...[...keys].filter((k) => !FIRST.includes(k)).sort()];
  const lines = [cols.join(',')];
  for (const s of steps) lines.push(cols.map((c) => csvCell(c === 'step' ? s.step : c === 'stage' ? s.stage : s.metrics[c])).join(','));
  return lines.join('\n') + '\n';
}

const series = (steps: StepRecord[], key: string, label = key): PlotSeries => ({ label, points: steps.map((s) => ({ x: s.step, y: s.metrics[key] ?? null })) });

/** Consecutive steps of one stage, as the plots' bands. */
export function stagesOf(steps: StepRecord[]): PlotStage[] {
  const out: PlotStage[] = [];
  for (const s of [...steps].sort((a, b) => a.step - b.step)) {
    const last = out.at(-1);
    if (last && last.name === s.stage && last.last === s.step - 1) last.last = s.step;
    else out.push({ name: s.stage, first: s.step, last: s.step });
  }
  return out;
}

/**
 * Write a run's report folder: `metrics.csv` and `metrics.json` (per-step metrics, held-out pass@1 before/after,
 * timings), and SVG plots per step (integer step ticks, one band per stage, each curve once): `reward.svg`
 * (mean reward of all and of kept rollouts, pass rate when it differs from the mean reward, held-out pass@1
 * marked), `tool-error-ratio.svg`, `response-length.svg`, `loss.svg`, `kl.svg`, `entropy.svg`,
 * `clip-fraction.svg`; a plot whose metric the run did not record is not written. Returns the file paths.
 */
export function writeRunReport(dir: string, r: RunResult): string[] {
  mkdirSync(dir, { recursive: true });
  const steps = r.steps;
  const stages = stagesOf(steps);
  const lastStep = steps.length ? Math.max(...steps.map((s) => s.step)) : 0;
  const marks: PlotMark[] = r.evaluations.map((e) => ({ x: e.afterStep - 0.5, y: e.passAt1, label: `${(e.passAt1 * 100).toFixed(1)}%` }));
  const plot = (title: string, yLabel: string, list: PlotSeries[], opts: { yRange?: [number, number]; marks?: boolean } = {}): string | null => {
    const s = dedupeSeries(list);
    if (s.length === 0) return null;
    return lineChartSvg({ title, xLabel: `step (0-based, as in metrics.csv; ${stages.length} stage${stages.length === 1 ? '' : 's'}, ${lastStep + 1} steps)`, yLabel, series: s, yRange: opts.yRange, stages, marks: opts.marks ? marks : undefined });
  };
  const files: Record<string, string | null> = {
    'metrics.csv': metricsCsv(steps),
    'metrics.json': JSON.stringify(
      {
        runId: r.runId, mode: r.mode, config: r.config.name, seed: r.config.seed, policyVersion: r.policyVersion, seconds: r.seconds, sft: r.sft,
        passAt1: { before: r.passAt1Before?.passAt1 ?? null, after: r.passAt1After?.passAt1 ?? null, heldOut: r.passAt1Before?.prompts ?? null, samples: r.config.eval.samples },
        evaluations: r.evaluations, evalBefore: r.passAt1Before, evalAfter: r.passAt1After, steps,
      },
      null, 2,
    ) + '\n',
    'reward.svg': plot(`Reward per step (held-out pass@1 ${fmtPct(r.passAt1Before?.passAt1)} -> ${fmtPct(r.passAt1After?.passAt1)})`, 'mean reward', [
      series(steps, 'rewardMean', 'reward, all rollouts'), series(steps, 'passRate', 'pass rate'), series(steps, 'rewardMeanKept', 'reward, kept rollouts'),
    ], { yRange: [0, 1], marks: true }),
    'tool-error-ratio.svg': plot('Tool-error ratio per step', 'erroneous calls / calls', [series(steps, 'toolErrorRatioPositive', 'positive rollouts'), series(steps, 'toolErrorRatioAll', 'all rollouts')], { yRange: [0, 1] }),
    'response-length.svg': plot('Response length per step', 'tokens (model + tool response)', [series(steps, 'responseLengthMean', 'all rollouts'), series(steps, 'responseLengthKeptMean', 'kept rollouts')]),
    'loss.svg': plot('Policy loss per step', 'loss', [series(steps, 'loss', 'loss')]),
    'kl.svg': plot('KL between sampling and updated policy per step', 'approx. KL (nats)', [series(steps, 'approxKl', 'approx. KL')]),
    'entropy.svg': plot('Policy entropy per step', 'entropy (nats)', [series(steps, 'entropy', 'entropy')]),
    'clip-fraction.svg': plot('Clipped-token fraction per step', 'share of tokens', [series(steps, 'clipFraction', 'clip fraction')]),
  };
  return Object.entries(files).flatMap(([name, text]) => {
    if (text === null) return [];
    const p = join(dir, name);
    writeFileSync(p, text);
    return [p];
  });
}

/** `12.5%` or `n/a`. */
export function fmtPct(v: number | null | undefined): string {
  return v === null || v === undefined ? 'n/a' : `${(v * 100).toFixed(1)}%`;
}
