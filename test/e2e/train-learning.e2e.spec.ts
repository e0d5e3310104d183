import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '@rstar/contracts';
import { connectRuntime, type Runtime } from '@rstar/messaging';
import { runTraining, type TrainingResult } from '../../libs/cli/src/train/training.run';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';

/**
 * Does GRPO-RoC make the tiny policy better? The RL stages of the `tiny` preset, started from the same
 * kind of SFT checkpoint as the preset's own SFT stage (400 steps, cached by the test support), with
 * pass@1 on 128 held-out prompts x 4 samples before and after.
 *
 * Measured on 2 cores: seed 1: 41.0% -> 50.8%, seed 2: 37.5% -> 46.5% (full preset runs). The margin
 * asserted here (+3 points) is a third of the smallest gain seen, and about twice the standard error of
 * the difference of two 512-sample means at these rates.
 */
describe('the tiny preset learns: held-out pass@1 rises over the SFT checkpoint', () => {
  let runtime: Runtime;
  let out: string;
  let result: TrainingResult;

  beforeAll(async () => {
    const ckpt = await ensureSftCheckpoint();
    out = mkdtempSync(join(tmpdir(), 'rstar-learning-'));
    const preset = parseYaml(readFileSync(resolve(__dirname, '../../configs/tiny.yaml'), 'utf8'));
    const config = parseRunConfig({
      ...preset,
      name: 'tiny-learning-e2e',
      policy: { ...preset.policy, init: 'checkpoint', checkpoint: ckpt },
      data: { ...preset.data, heldOutSize: 128 },
    });
    runtime = await connectRuntime({ natsUrl: '', databaseUrl: '' });
    result = await runTraining(config, { runtime, outDir: out });
  }, SFT_CHECKPOINT_TIMEOUT_MS + 600_000);

  afterAll(async () => {
    await runtime?.close();
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('improves pass@1 by at least 3 points', () => {
    const before = result.passAt1Before!;
    const after = result.passAt1After!;
    expect(before.prompts * before.samples).toBe(512);
    expect(after.prompts * after.samples).toBe(512);
    const gain = after.passAt1 - before.passAt1;
    // The measured figures belong in the test log: the margin is a claim about learning, not a constant.
    process.stdout.write(`tiny preset RL: held-out pass@1 ${(before.passAt1 * 100).toFixed(1)}% -> ${(after.passAt1 * 100).toFixed(1)}% (${result.steps.length} steps)\n`);
    expect(gain, `pass@1 ${(before.passAt1 * 100).toFixed(1)}% -> ${(after.passAt1 * 100).toFixed(1)}%`).toBeGreaterThanOrEqual(0.03);
  });
});
