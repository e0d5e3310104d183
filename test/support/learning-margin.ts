/**
 * How much does the `tiny` preset's RL gain, across SFT checkpoints and RL seeds? The measurement behind
 * the margins the learning e2e tests assert (test/e2e/train-learning.e2e.spec.ts): for each SFT seed the
 * test-support checkpoint (400 steps, cached in .rstar/cache), then the preset's RL stages standalone
 * with held-out pass@1 before and after. One JSON line per run, the last line a summary.
 *
 *   npx tsx test/support/learning-margin.ts --sft-seeds 7,8,9 --rl-seeds 1,2 [--held-out 256] [--samples 8] [--config configs/tiny.yaml]
 *
 * ~2.5 min per run on 2 cores with 256 x 8 held-out samples, plus ~5 min per SFT seed not cached yet.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseRunConfig } from '@rstar/contracts';
import { connectRuntime } from '@rstar/runtime';
import { pairedGain, runTraining } from '@rstar/training';
import { ensureSftCheckpoint } from './sft-checkpoint';

function option(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}

function integers(name: string, dflt: string): number[] {
  const v = option(name, dflt).split(',').map(Number);
  if (v.some((x) => !Number.isInteger(x))) throw new Error(`--${name} takes integers separated by commas, got "${option(name, dflt)}"`);
  return v;
}

async function main(): Promise<void> {
  const sftSeeds = integers('sft-seeds', '7');
  const rlSeeds = integers('rl-seeds', '1');
  const [heldOut] = integers('held-out', '256');
  const [samples] = integers('samples', '8');
  const preset = parseYaml(readFileSync(resolve(option('config', resolve(__dirname, '../../configs/tiny.yaml'))), 'utf8'));
  const gains: number[] = [];
  for (const sftSeed of sftSeeds) {
    const checkpoint = await ensureSftCheckpoint({ seed: sftSeed });
    for (const rlSeed of rlSeeds) {
      const out = mkdtempSync(join(tmpdir(), 'rstar-margin-'));
      const config = parseRunConfig({
        ...preset,
        name: 'learning-margin',
        seed: rlSeed,
        policy: { ...preset.policy, init: 'checkpoint', checkpoint },
        data: { ...preset.data, heldOutSize: heldOut },
        eval: { ...preset.eval, samples },
      });
      const runtime = await connectRuntime({ natsUrl: '', databaseUrl: '' });
      const t0 = Date.now();
      try {
        const r = await runTraining(config, { runtime, outDir: out });
        const before = r.passAt1Before!.passAt1;
        const after = r.passAt1After!.passAt1;
        const { gain, se } = pairedGain(r.passAt1Before!, r.passAt1After!);
        gains.push(gain);
        const passRate = r.steps.map((s) => Math.round(Number(s.metrics.passRate ?? NaN) * 1000) / 1000);
        console.log(JSON.stringify({ sftSeed, rlSeed, before, after, gain, se, seconds: (Date.now() - t0) / 1000, passRate }));
      } finally {
        await runtime.close();
        rmSync(out, { recursive: true, force: true });
      }
    }
  }
  const mean = gains.reduce((a, b) => a + b, 0) / gains.length;
  console.log(JSON.stringify({ runs: gains.length, heldOut, samples, gainMin: Math.min(...gains), gainMean: mean, gainMax: Math.max(...gains) }));
}

main().then(() => process.exit(0), (e: Error) => {
  console.error(`learning-margin: ${e.message}`);
  process.exit(1);
});
