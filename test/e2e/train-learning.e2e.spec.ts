import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '@rstar/contracts';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { pairedGain, runTraining, type TrainingResult } from '@rstar/training';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';

/**
 * Does GRPO-RoC make the tiny policy better? The RL stages of the `tiny` preset (RL seed 1, the preset's),
 * started from the test-support SFT checkpoint (400 steps, SFT seed 7; the same on every machine since
 * the SFT traces show a seeded execution time), with pass@1 on 256 held-out prompts x 8 samples before
 * and after; the gain's paired standard error is ~1.6 points.
 *
 * Measured on 2 cores with test/support/learning-margin.ts (gain ± paired SE, points): this checkpoint,
 * RL seed 1: +8.4 ± 1.7 and +7.6 ± 1.8 (two runs: a tool response shows the call's execution time, which
 * the policy reads); RL seed 2: +3.7 ± 1.7; SFT seeds 8 and 9, RL seed 1: +5.6 ± 1.5, +6.6 ± 1.7. The
 * asserted +3 points is below every gain measured, ~2.8 SE below this test's. Before the traces were
 * seeded every machine trained its own checkpoint, and with 128 x 4 samples gains from +2.0 (once, in
 * CI) to +15.6 were seen.
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
      data: { ...preset.data, heldOutSize: 256 },
      eval: { ...preset.eval, samples: 8 },
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
    expect(before.prompts * before.samples).toBe(2048);
    expect(after.prompts * after.samples).toBe(2048);
    const { gain, se } = pairedGain(before, after);
    // The measured figures belong in the test log: the margin is a claim about learning, not a constant.
    process.stdout.write(`tiny preset RL: held-out pass@1 ${(before.passAt1 * 100).toFixed(1)}% -> ${(after.passAt1 * 100).toFixed(1)}% (+${(gain * 100).toFixed(1)} ± ${(se * 100).toFixed(1)} points, ${result.steps.length} steps)\n`);
    expect(gain, `pass@1 ${(before.passAt1 * 100).toFixed(1)}% -> ${(after.passAt1 * 100).toFixed(1)}%`).toBeGreaterThanOrEqual(0.03);
  });
});
