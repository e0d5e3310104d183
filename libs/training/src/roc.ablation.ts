import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunConfig } from '@rstar/contracts';
import type { Runtime } from '@rstar/runtime';
import { runSft } from '@rstar/policy';
import { SandboxPool } from '@rstar/sandbox';
import { REPO_ROOT, sftOptionsOf } from '@rstar/step-driver';
import { summarizeArms, writeAblationReport, type ArmCurves, type ArmSummary, type TrainProgress } from '@rstar/training-report';
import { runTraining, type TrainingResult } from './training.run';

/** One arm of the ablation for one seed: its per-step curves plus the run's identity and pass@1. */
export interface AblationArm extends ArmCurves {
  runId: string;
  passAt1Before: number | null;
  passAt1After: number | null;
}

/** The result of {@link runRocAblation}. */
export interface AblationResult {
  arms: AblationArm[];
  /** Steps averaged in the `lastK` summaries. */
  lastK: number;
  /** Per arm, pooled over seeds: each metric's mean over all steps and over the last K steps. */
  summary: { roc: ArmSummary; grpo: ArmSummary };
  /** The same per seed (the spread across seeds is what a claimed effect must beat). */
  perSeed: Array<{ seed: number; sftCheckpoint: string; roc: ArmSummary; grpo: ArmSummary }>;
  files: string[];
}

/** Options of {@link runRocAblation}. */
export interface AblationOptions {
  seeds: number[];
  /**
   * Report folder (default `<repo>/runs/ablate-roc-<time>`). Rerunning into the same folder reuses its SFT
   * checkpoints and every finished arm whose config is unchanged, so seeds can run in separate processes
   * (`--seeds 1` and `--seeds 2` in parallel) and a final `--seeds 1,2` only merges them into one report.
   */
  outDir?: string;
  skipEval?: boolean;
  /** Opens the bus + archive of one arm run (default: `runTraining`'s own, standalone unless RSTAR_NATS_URL is set); closed after the arm. */
  openRuntime?: (armDir: string) => Promise<Runtime>;
  /** Steps at the end averaged in the `lastK` summaries (default: half the steps, rounded up). */
  lastK?: number;
  onProgress?: (arm: string, p: TrainProgress) => void;
}

/**
 * The SFT checkpoint both arms of `seed` start from: the config's checkpoint when `policy.init` is
 * `checkpoint`, else `runSft` with {@link sftOptionsOf} (the config's SFT section, INCLUDING `sft.toolErrorRate`, the share of
 * erring traces, and `sft.toolErrorKinds`, their mistakes; the run's tool limits), written to `dir` (reused when `dir` already holds one).
 */
async function sftCheckpointFor(config: RunConfig, seed: number, dir: string, onProgress: (p: TrainProgress) => void): Promise<string> {
  if (config.policy.init === 'checkpoint') return resolve(REPO_ROOT, config.policy.checkpoint ?? '');
  if (existsSync(join(dir, 'model.json'))) {
    onProgress({ phase: 'message', text: `reusing SFT checkpoint ${dir}` });
    return dir;
  }
  // The traces' programs run under the run's tool limits, as in `rstar train`.
  const sandbox = new SandboxPool({ workers: 2 });
  await sandbox.start();
  let r: Awaited<ReturnType<typeof runSft>>;
  try {
    r = await runSft(sftOptionsOf(config, { outDir: dir, seed, sandbox }), (p) => {
      if (p.phase === 'train') onProgress({ phase: 'sft', step: p.step, steps: p.steps, loss: p.loss });
      else if (p.phase === 'traces') onProgress({ phase: 'sft-traces', done: p.done, total: p.total });
    });
  } finally {
    await sandbox.close();
  }
  r.model.dispose();
  onProgress({ phase: 'message', text: `SFT seed ${seed}: loss ${r.finalLoss.toFixed(3)}, held-out greedy two-turn correct ${(r.heldOut.correct * 100).toFixed(0)}% of ${r.heldOut.n}` });
  return r.checkpoint.dir;
}

const ARM_FILE = 'ablation-arm.json';

/** A finished arm recorded in `dir` by an earlier run of the same ablation with the same config (`key`), else null. */
function readFinishedArm(dir: string, key: string): AblationArm | null {
  try {
    const saved = JSON.parse(readFileSync(join(dir, ARM_FILE), 'utf8')) as { key: string; arm: AblationArm };
    return saved.key === key ? saved.arm : null;
  } catch {
    return null;
  }
}

const toArm = (arm: 'roc' | 'grpo', seed: number, r: TrainingResult): AblationArm => ({
  arm, seed, runId: r.runId,
  toolErrorRatioPositive: r.steps.map((s) => s.metrics.toolErrorRatioPositive ?? null),
  toolErrorRatioPositiveKept: r.steps.map((s) => s.metrics.toolErrorRatioPositiveKept ?? null),
  toolErrorRatioAll: r.steps.map((s) => s.metrics.toolErrorRatioAll ?? null),
  passRate: r.steps.map((s) => s.metrics.passRate ?? null),
  passAt1Before: r.passAt1Before?.passAt1 ?? null,
  passAt1After: r.passAt1After?.passAt1 ?? null,
});

/**
 * `rstar ablate roc`: for each seed, one SFT checkpoint (with the config's share of err-and-recover
 * traces, `sft.toolErrorRate`), then the same RL run from it twice: GRPO-RoC and plain GRPO (resampling
 * mode `none`: G of the 2G kept uniformly at random). Same prompts and sampling seeds, so the arms differ
 * only in which rollouts are trained on. Reports per step and in total the tool-error ratio in positive
 * rollouts (sampled and kept), in all rollouts, and the pass rate, as `ablation.json`, `ablation.csv` and
 * SVG curves under `outDir` (rStar2-Agent §3 / Fig. 4: RoC lowers the share of erroneous tool calls in
 * correct rollouts). Arm runs go to `<outDir>/seed-<s>-<arm>`, SFT checkpoints to `<outDir>/seed-<s>-sft`.
 */
export async function runRocAblation(config: RunConfig, opts: AblationOptions): Promise<AblationResult> {
  const outDir = resolve(opts.outDir ?? join(REPO_ROOT, 'runs', `ablate-roc-${Date.now()}`));
  mkdirSync(outDir, { recursive: true });
  const arms: AblationArm[] = [];
  const sftDirs = new Map<number, string>();
  for (const seed of opts.seeds) {
    const say = (arm: string) => (p: TrainProgress) => opts.onProgress?.(`${arm} seed ${seed}`, p);
    const checkpoint = await sftCheckpointFor(config, seed, join(outDir, `seed-${seed}-sft`), say('sft'));
    sftDirs.set(seed, checkpoint);
    const fromSft: RunConfig = { ...config, seed, policy: { ...config.policy, init: 'checkpoint', checkpoint } };
    for (const arm of ['roc', 'grpo'] as const) {
      const armDir = join(outDir, `seed-${seed}-${arm}`);
      const key = createHash('sha256').update(JSON.stringify({ arm, config: fromSft, skipEval: !!opts.skipEval })).digest('hex');
      const done = readFinishedArm(armDir, key);
      if (done) {
        say(arm)({ phase: 'message', text: `reusing the finished arm in ${armDir}` });
        arms.push(done);
        continue;
      }
      mkdirSync(armDir, { recursive: true });
      const runtime = await opts.openRuntime?.(armDir);
      let r: TrainingResult;
      try {
        r = await runTraining(fromSft, { outDir: armDir, runtime, rocOverride: arm === 'roc', skipEval: opts.skipEval, onProgress: say(arm) });
      } finally {
        await runtime?.close();
      }
      const a = toArm(arm, seed, r);
      writeFileSync(join(armDir, ARM_FILE), JSON.stringify({ key, arm: a }, null, 2) + '\n');
      arms.push(a);
    }
  }
  const steps = Math.max(...arms.map((a) => a.passRate.length));
  const lastK = Math.max(1, Math.min(steps, opts.lastK ?? Math.ceil(steps / 2)));
  const of = (arm: 'roc' | 'grpo', seed?: number) => summarizeArms(arms.filter((a) => a.arm === arm && (seed === undefined || a.seed === seed)), lastK);
  const result: Omit<AblationResult, 'files'> = {
    arms, lastK,
    summary: { roc: of('roc'), grpo: of('grpo') },
    perSeed: opts.seeds.map((seed) => ({ seed, sftCheckpoint: sftDirs.get(seed)!, roc: of('roc', seed), grpo: of('grpo', seed) })),
  };
  const files = writeAblationReport(outDir, arms, { config: config.name, seeds: opts.seeds, toolErrorRate: config.sft.toolErrorRate ?? 0, ...(config.sft.toolErrorKinds ? { toolErrorKinds: config.sft.toolErrorKinds } : {}), lastK, summary: result.summary, perSeed: result.perSeed });
  return { ...result, files };
}
