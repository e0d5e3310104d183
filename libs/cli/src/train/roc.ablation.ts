import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunConfig } from '@rstar/contracts';
import { lineChartSvg } from '../report/svg.plot';
import { REPO_ROOT } from './run-config.loader';
import { runTraining, type TrainProgress, type TrainingResult } from './training.run';

/** One arm of the ablation for one seed. */
export interface AblationArm {
  arm: 'roc' | 'grpo';
  seed: number;
  runId: string;
  /** Tool-error ratio in positive (reward 1) rollouts per step (null when a step had no positive rollout with a call). */
  toolErrorRatioPositive: Array<number | null>;
  /** The same over the positives kept for training. */
  toolErrorRatioPositiveKept: Array<number | null>;
  /** Tool-error ratio over all sampled rollouts per step. */
  toolErrorRatioAll: Array<number | null>;
  passRate: Array<number | null>;
  passAt1Before: number | null;
  passAt1After: number | null;
}

/** The result of {@link runRocAblation}: arms, per-arm mean curves and the report files. */
export interface AblationResult {
  arms: AblationArm[];
  /** Mean over seeds and steps of the positive-rollout tool-error ratio, per arm. */
  meanToolErrorRatioPositive: { roc: number | null; grpo: number | null };
  meanToolErrorRatioPositiveKept: { roc: number | null; grpo: number | null };
  meanToolErrorRatioAll: { roc: number | null; grpo: number | null };
  files: string[];
}

const meanOf = (xs: Array<number | null>): number | null => {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
};

/**
 * `rstar ablate roc`: the same run with GRPO-RoC and with plain GRPO (resampling mode `none`, i.e. G of
 * the 2G kept uniformly at random), for each seed. Both arms of a seed start from the same SFT
 * checkpoint (trained once by the RoC arm) and use the same prompts and sampling seeds, so they differ only
 * in which rollouts are trained on. Writes `ablation.json`, `ablation.csv` and
 * `tool-error-ratio-positive.svg` under `outDir` (rStar2-Agent §3, Fig. 4: RoC lowers the share of
 * erroneous tool calls in correct rollouts).
 */
export async function runRocAblation(
  config: RunConfig, opts: { seeds: number[]; outDir?: string; skipEval?: boolean; onProgress?: (arm: string, p: TrainProgress) => void },
): Promise<AblationResult> {
  const outDir = resolve(opts.outDir ?? join(REPO_ROOT, 'runs', `ablate-roc-${Date.now()}`));
  mkdirSync(outDir, { recursive: true });
  const arms: AblationArm[] = [];
  const toArm = (arm: 'roc' | 'grpo', seed: number, r: TrainingResult): AblationArm => ({
    arm, seed, runId: r.runId,
    toolErrorRatioPositive: r.steps.map((s) => s.metrics.toolErrorRatioPositive ?? null),
    toolErrorRatioPositiveKept: r.steps.map((s) => s.metrics.toolErrorRatioPositiveKept ?? null),
    toolErrorRatioAll: r.steps.map((s) => s.metrics.toolErrorRatioAll ?? null),
    passRate: r.steps.map((s) => s.metrics.passRate ?? null),
    passAt1Before: r.passAt1Before?.passAt1 ?? null,
    passAt1After: r.passAt1After?.passAt1 ?? null,
  });
  for (const seed of opts.seeds) {
    const base: RunConfig = { ...config, seed, roc: { ...config.roc, enabled: true } };
    const roc = await runTraining(base, { outDir: join(outDir, `seed-${seed}-roc`), skipEval: opts.skipEval, onProgress: (p) => opts.onProgress?.(`roc seed ${seed}`, p) });
    arms.push(toArm('roc', seed, roc));
    const fromSft: RunConfig = roc.sft ? { ...base, policy: { ...base.policy, init: 'checkpoint', checkpoint: roc.sft.checkpoint } } : base;
    const grpo = await runTraining(fromSft, { outDir: join(outDir, `seed-${seed}-grpo`), rocOverride: false, skipEval: opts.skipEval, onProgress: (p) => opts.onProgress?.(`grpo seed ${seed}`, p) });
    arms.push(toArm('grpo', seed, grpo));
  }
  const steps = Math.max(...arms.map((a) => a.toolErrorRatioPositive.length));
  const meanCurve = (arm: 'roc' | 'grpo', key: 'toolErrorRatioPositive' | 'toolErrorRatioPositiveKept' | 'toolErrorRatioAll') =>
    Array.from({ length: steps }, (_, i) => meanOf(arms.filter((a) => a.arm === arm).map((a) => a[key][i] ?? null)));
  const curves = {
    roc: meanCurve('roc', 'toolErrorRatioPositive'), grpo: meanCurve('grpo', 'toolErrorRatioPositive'),
    rocKept: meanCurve('roc', 'toolErrorRatioPositiveKept'), grpoKept: meanCurve('grpo', 'toolErrorRatioPositiveKept'),
    rocAll: meanCurve('roc', 'toolErrorRatioAll'), grpoAll: meanCurve('grpo', 'toolErrorRatioAll'),
  };
  const armMean = (arm: 'roc' | 'grpo', key: 'toolErrorRatioPositive' | 'toolErrorRatioPositiveKept' | 'toolErrorRatioAll') => meanOf(arms.filter((a) => a.arm === arm).flatMap((a) => a[key]));
  const result: Omit<AblationResult, 'files'> = {
    arms,
    meanToolErrorRatioPositive: { roc: armMean('roc', 'toolErrorRatioPositive'), grpo: armMean('grpo', 'toolErrorRatioPositive') },
    meanToolErrorRatioPositiveKept: { roc: armMean('roc', 'toolErrorRatioPositiveKept'), grpo: armMean('grpo', 'toolErrorRatioPositiveKept') },
    meanToolErrorRatioAll: { roc: armMean('roc', 'toolErrorRatioAll'), grpo: armMean('grpo', 'toolErrorRatioAll') },
  };
  const csv = ['step,roc_tool_error_ratio_positive,grpo_tool_error_ratio_positive,roc_kept,grpo_kept,roc_all,grpo_all',
    ...Array.from({ length: steps }, (_, i) => [i, curves.roc[i], curves.grpo[i], curves.rocKept[i], curves.grpoKept[i], curves.rocAll[i], curves.grpoAll[i]].map((v) => (v === null ? '' : String(v))).join(','))].join('\n') + '\n';
  const pts = (c: Array<number | null>) => c.map((y, x) => ({ x, y }));
  const files = {
    'ablation.json': JSON.stringify({ ...result, curves }, null, 2) + '\n',
    'ablation.csv': csv,
    'tool-error-ratio-positive.svg': lineChartSvg({
      title: `Tool-error ratio in positive rollouts (mean over seeds ${opts.seeds.join(',')})`, xLabel: 'RL step', yLabel: 'erroneous calls / calls', yRange: [0, 1],
      series: [{ label: 'GRPO-RoC', points: pts(curves.roc) }, { label: 'plain GRPO', points: pts(curves.grpo) }, { label: 'RoC (kept)', points: pts(curves.rocKept) }, { label: 'GRPO (kept)', points: pts(curves.grpoKept) }],
    }),
  };
  const paths = Object.entries(files).map(([n, t]) => {
    writeFileSync(join(outDir, n), t);
    return join(outDir, n);
  });
  return { ...result, files: paths };
}
