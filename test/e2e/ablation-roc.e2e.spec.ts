import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig, type RunConfig } from '@rstar/contracts';
import { connectRuntime } from '@rstar/messaging';
import { PolicyModel, toolErrorTokenizerSpec } from '@rstar/policy';
import { runRocAblation, type AblationResult } from '../../libs/cli/src/train/roc.ablation';

const STEPS = 2;

/**
 * `rstar ablate roc` end to end at smoke scale: the `roc-ablation` preset with its err-and-recover SFT
 * data (`sft.toolErrorRate`) but a small model and few SFT/RL steps, one seed, both arms. Asserts the
 * plumbing the measured ablation relies on: the SFT checkpoint is trained on the error share (tool-error
 * tokenizer, recorded rate), both arms start from it and run every step, the report has per-step CSV,
 * JSON and SVG curves, and a rerun into the same folder reuses the SFT checkpoint and finished arms.
 *
 * The EFFECT (lower positive-rollout tool-error ratio with RoC) is not asserted: measured with the full
 * preset (see the report of issue 7), the tiny policy's err-and-recover rollouts almost never end correct,
 * so neither arm has erroneous calls in its positive rollouts to tell apart.
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
    expect(config.sft.toolErrorRate).toBe(0.4);
    const sft = await PolicyModel.load(result.perSeed[0].sftCheckpoint);
    expect(sft.tokenizer.spec).toEqual(toolErrorTokenizerSpec());
    expect(sft.meta).toMatchObject({ stage: 'sft', seed: 3, toolErrorRate: 0.4 });
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
    expect(json.toolErrorRate).toBe(0.4);
    expect(json.lastK).toBe(1);
    expect(json.summary.roc.passRate).toEqual(result.summary.roc.passRate);
  });

  it('a rerun into the same folder reuses the SFT checkpoint and the finished arms', async () => {
    const again = await runRocAblation(config, { seeds: [3], outDir: out, skipEval: true, openRuntime });
    expect(again.arms).toEqual(result.arms);
    expect(again.perSeed[0].sftCheckpoint).toBe(result.perSeed[0].sftCheckpoint);
  });
});
