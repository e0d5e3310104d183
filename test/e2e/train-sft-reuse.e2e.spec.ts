import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '@rstar/contracts';
import { connectRuntime } from '@rstar/runtime';
import { runTraining, SFT_CACHE_DIR, sftCacheKey, sftCodeVersion, type TrainingResult } from '@rstar/training';

const hashOf = (dir: string) => createHash('sha256').update(readFileSync(join(dir, 'weights.bin'))).digest('hex');

/**
 * A second `rstar train` with the same SFT settings and seed reuses the SFT checkpoint the first one trained
 * (keyed by the SFT settings, the seed and the SFT code's version), says so, and trains RL from the same
 * weights; the RL settings may differ. `checkpoints.keepLast` keeps only the newest step checkpoint.
 */
describe('rstar train reuses its SFT checkpoint', () => {
  // A seed of its own, so the first run below really trains (no entry from an earlier test run).
  const seed = 100_000 + (Date.now() % 800_000);
  const out = mkdtempSync(join(tmpdir(), 'rstar-sft-reuse-'));
  const base = {
    name: 'sft-reuse', seed, policy: { model: { layers: 1, dModel: 32, heads: 2, context: 160 } },
    data: { source: 'tasks', heldOutSize: 2, trainSize: 32 },
    sft: { steps: 4, batchSize: 8, lr: 0.003, warmupSteps: 1 },
    stages: [{ name: 'rl-1', steps: 2, promptsPerStep: 1, groupSize: 2, oversample: 2, maxResponseTokens: 60, maxTurns: 2, lr: 0.0005 }],
    eval: { samples: 1, temperature: 0, maxTurns: 2, maxResponseTokens: 60 },
    trainer: { warmupSteps: 1 },
    checkpoints: { keepLast: 1 },
  };
  const key = sftCacheKey(parseRunConfig(base), sftCodeVersion()!);
  afterAll(() => {
    rmSync(out, { recursive: true, force: true });
    rmSync(join(SFT_CACHE_DIR, key), { recursive: true, force: true });
  });

  const train = async (config: object, dir: string) => {
    const messages: string[] = [];
    const runtime = await connectRuntime({ natsUrl: '', databaseUrl: '' });
    try {
      const r = await runTraining(parseRunConfig(config), { runtime, outDir: join(out, dir), sandboxWorkers: 1, skipEval: true, onProgress: (p) => p.phase === 'message' && messages.push(p.text) });
      return { r, messages };
    } finally {
      await runtime.close();
    }
  };

  it('trains SFT once, then reuses it (printed as reused) for a run with other RL settings', async () => {
    const first: { r: TrainingResult; messages: string[] } = await train(base, 'a');
    expect(first.r.sft).toMatchObject({ steps: 4, reused: false });
    expect(first.messages.some((m) => m.startsWith('SFT: 4 steps'))).toBe(true);
    const second = await train({ ...base, stages: [{ ...base.stages[0], lr: 0.001, steps: 1 }] }, 'b');
    expect(second.r.sft).toMatchObject({ steps: 4, reused: true, finalLoss: first.r.sft!.finalLoss });
    expect(second.messages.find((m) => m.startsWith('SFT: reused'))).toMatch(new RegExp(`seed ${seed} and code version ${sftCodeVersion()}`));
    expect(hashOf(second.r.sft!.checkpoint)).toBe(hashOf(first.r.sft!.checkpoint));
    // Other SFT settings: trained again.
    const third = await train({ ...base, sft: { ...base.sft, steps: 3 } }, 'c');
    expect(third.r.sft).toMatchObject({ steps: 3, reused: false });
    rmSync(join(SFT_CACHE_DIR, sftCacheKey(parseRunConfig({ ...base, sft: { ...base.sft, steps: 3 } }), sftCodeVersion()!)), { recursive: true, force: true });
    // keepLast 1: the SFT checkpoint and the newest step checkpoint at most.
    for (const r of [first.r, second.r]) expect(readdirSync(join(r.outDir, 'checkpoints')).filter((d) => d.startsWith('step-')).length).toBeLessThanOrEqual(1);
    expect(readdirSync(join(first.r.outDir, 'checkpoints'))).toContain('sft');
  }, 900_000);
});
