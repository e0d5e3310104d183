import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig, type RunConfig } from '@rstar/contracts';
import { connectRuntime } from '@rstar/runtime';
import { PolicyModel, toolErrorTokenizerSpec } from '@rstar/policy';
import { runRocAblation, type AblationResult } from '@rstar/training';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';

const STEPS = 2;
/**
 * The effect test: SFT seed (its checkpoint is cached), RL seed, steps averaged and the least RoC-vs-GRPO
 * gap asserted. Measured from the same SFT checkpoint, last-6 mean RoC vs GRPO: RL seed 1 0.08 vs 0.96,
 * RL seed 2 0.27 vs 1.00 (gaps 0.87 and 0.73).
 */
const EFFECT_SFT_SEED = 1;
const EFFECT_RL_SEED = Number(process.env.RSTAR_ABLATION_RL_SEED ?? 2);
const LAST_K = 6;
const MARGIN = 0.3;

/**
 * `rstar ablate roc` end to end at smoke scale: the `roc-ablation` preset with its noisy SFT data
 * (`sft.toolErrorRate`, `sft.toolErrorKinds`) but a small model and few SFT/RL steps, one seed, both arms.
 * Asserts the plumbing the measured ablation relies on: the SFT checkpoint is trained on the error share
 * (tool-error tokenizer, recorded rate and kinds), both arms start from it and run every step, the report
 * has per-step CSV, JSON and SVG curves, and a rerun into the same folder reuses the SFT checkpoint and
 * finished arms.
 */
describe('rstar ablate roc: both arms from one err-and-recover SFT checkpoint, curves reported', () => {
  let out: string;
  let config: RunConfig;
  let result: AblationResult;
  const openRuntime = (dir: string) => connectRuntime({ natsUrl: '', databaseUrl: '', dataDir: join(dir, 'events') });

  beforeAll(async () => {
    const preset = parseYaml(readFileSync(resolve(__dirname, '../../configs/roc-ablation.yaml'), 'utf8'));
    out = mkdtempSync(join(tmpdir(), 'rstar-ablation-'));
    config = parseRunConfig({
      ...preset,
      name: 'roc-ablation-e2e',
      policy: { ...preset.policy, model: { layers: 1, dModel: 32, heads: 2, context: 192 } },
      data: { ...preset.data, trainSize: 64, heldOutSize: 4 },
      sft: { ...preset.sft, steps: 8, batchSize: 8, warmupSteps: 1 },
      stages: [{ ...preset.stages[0], steps: STEPS, promptsPerStep: 2, groupSize: 2 }],
      trainer: { ...preset.trainer, warmupSteps: 1 },
    });
    result = await runRocAblation(config, { seeds: [3], outDir: out, skipEval: true, openRuntime });
  }, 600_000);

  afterAll(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('trains the SFT checkpoint on the preset\'s error share, with the tool-error tokenizer', async () => {
    expect(config.sft).toMatchObject({ toolErrorRate: 0.5, toolErrorKinds: ['trailing-check'] });
    const sft = await PolicyModel.load(result.perSeed[0].sftCheckpoint);
    expect(sft.tokenizer.spec).toEqual(toolErrorTokenizerSpec());
    expect(sft.meta).toMatchObject({ stage: 'sft', seed: 3, toolErrorRate: 0.5, toolErrorKinds: ['trailing-check'] });
    sft.dispose();
  });

  it('runs both arms for every step and writes per-step CSV, JSON and SVG curves', () => {
    expect(result.arms.map((a) => [a.arm, a.seed, a.passRate.length, a.toolErrorRatioAll.length])).toEqual([['roc', 3, STEPS, STEPS], ['grpo', 3, STEPS, STEPS]]);
    for (const f of ['ablation.csv', 'ablation.json', 'tool-error-ratio-positive.svg', 'tool-error-ratio-all.svg', 'pass-rate.svg']) expect(existsSync(join(out, f)), f).toBe(true);
    const csv = readFileSync(join(out, 'ablation.csv'), 'utf8').trim().split('\n');
    expect(csv[0]).toBe('seed,arm,step,toolErrorRatioPositive,toolErrorRatioPositiveKept,toolErrorRatioAll,passRate');
    expect(csv.filter((l) => l.startsWith('3,roc,'))).toHaveLength(STEPS);
    expect(csv.filter((l) => l.startsWith('mean,grpo,'))).toHaveLength(STEPS);
    const json = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8'));
    expect(json).toMatchObject({ toolErrorRate: 0.5, toolErrorKinds: ['trailing-check'] });
    expect(json.lastK).toBe(1);
    expect(json.summary.roc.passRate).toEqual(result.summary.roc.passRate);
  });

  it('a rerun into the same folder reuses the SFT checkpoint and the finished arms', async () => {
    const again = await runRocAblation(config, { seeds: [3], outDir: out, skipEval: true, openRuntime });
    expect(again.arms).toEqual(result.arms);
    expect(again.perSeed[0].sftCheckpoint).toBe(result.perSeed[0].sftCheckpoint);
  });
});

/**
 * The ablation's EFFECT (rStar2-Agent §3 / Fig. 4), on the full `roc-ablation` preset for one seed:
 * the SFT policy writes the noisy `; print(check)` trailing line in about half its calls, which prints the
 * answer and then fails (runtime_error). Plain GRPO gives a noisy and a clean correct rollout the same
 * advantage; RoC keeps the positives with fewer tool errors, so the policy drops the noisy line.
 * Asserted: the tool-error ratio in sampled positive rollouts over the last K steps is lower with RoC than
 * with plain GRPO by at least MARGIN, under the gaps measured at the preset's lr 5e-4: 0.42 (RL seed 1: RoC
 * 0.15 vs GRPO 0.57) and 0.56 (RL seed 2, this test's default: 0.07 vs 0.63); RSTAR_ABLATION_RL_SEED picks
 * another RL seed. The SFT checkpoint comes from the `.rstar/cache` (keyed by every
 * SFT setting); the first run trains it (~8 min on 2 busy cores), later runs take ~2.5 min (140-155 s measured on 2 cores).
 * That is as long as the rest of the suite's slowest files together, so it runs when RSTAR_ABLATION_E2E=1
 * (`RSTAR_ABLATION_E2E=1 npx vitest run test/e2e/ablation-roc.e2e.spec.ts`); the pipeline tests above always run.
 */
const EFFECT = process.env.RSTAR_ABLATION_E2E === '1';
if (!EFFECT) console.info('ablation effect test skipped: set RSTAR_ABLATION_E2E=1 to run it (~2.5 min, plus ~5-8 min to train its SFT checkpoint once)');
describe.skipIf(!EFFECT)('rstar ablate roc: RoC lowers the tool-error ratio in correct rollouts (trailing-check SFT)', () => {
  let out: string;
  let result: AblationResult;
  const openRuntime = (dir: string) => connectRuntime({ natsUrl: '', databaseUrl: '', dataDir: join(dir, 'events') });

  beforeAll(async () => {
    const preset = parseYaml(readFileSync(resolve(__dirname, '../../configs/roc-ablation.yaml'), 'utf8'));
    const { sft } = preset;
    const checkpoint = await ensureSftCheckpoint({
      steps: sft.steps, seed: EFFECT_SFT_SEED, model: preset.policy.model, batchSize: sft.batchSize, lr: sft.lr, warmupSteps: sft.warmupSteps,
      toolErrorRate: sft.toolErrorRate, toolErrorKinds: sft.toolErrorKinds,
    });
    out = mkdtempSync(join(tmpdir(), 'rstar-ablation-effect-'));
    const config = parseRunConfig({ ...preset, name: 'roc-ablation-effect-e2e', policy: { ...preset.policy, init: 'checkpoint', checkpoint } });
    result = await runRocAblation(config, { seeds: [EFFECT_RL_SEED], outDir: out, skipEval: true, openRuntime, lastK: LAST_K });
  }, SFT_CHECKPOINT_TIMEOUT_MS + 600_000);

  afterAll(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it(`the tool-error ratio in positive rollouts over the last ${LAST_K} steps is lower with RoC than with plain GRPO`, () => {
    const roc = result.summary.roc.toolErrorRatioPositive;
    const grpo = result.summary.grpo.toolErrorRatioPositive;
    const round = (xs: Array<number | null>) => xs.map((v) => (v === null ? null : Number(v.toFixed(3))));
    const curves = Object.fromEntries(result.arms.map((a) => [a.arm, { toolErrorRatioPositive: round(a.toolErrorRatioPositive), passRate: round(a.passRate) }]));
    // The curves go to the log: they are the measurement the margin is checked against.
    console.info(`ablation effect (SFT seed ${EFFECT_SFT_SEED}, RL seed ${EFFECT_RL_SEED}): ${JSON.stringify({ curves, roc, grpo })}`);
    expect(roc.lastK).not.toBeNull();
    expect(grpo.lastK).not.toBeNull();
    expect(grpo.lastK! - roc.lastK!, JSON.stringify({ roc, grpo })).toBeGreaterThanOrEqual(MARGIN);
  });
});
