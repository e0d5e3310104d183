import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';
import { parseRunConfig, type RstarEvent } from '@rstar/contracts';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { readRunEvents } from '@rstar/step-driver';
import { rebuildStepBatch, runTraining, type TrainingResult } from '@rstar/training';

const count = (events: readonly RstarEvent[], type: string, step?: number) =>
  events.filter((e) => e.type === type && (step === undefined || (e.data as { step?: number }).step === step)).length;

// The SFT checkpoint of the tiny preset (copied from a `pnpm rstar train --preset tiny` run): it solves part of
// the task family, so RL steps have mixed-reward groups and really train.
// A small SFT checkpoint, trained once by the test support and cached under .rstar/cache (never committed).
let FIXTURE_CKPT = '';

describe('rstar train, standalone (PGlite + in-process bus + built-in engine over the SGLang adapter)', () => {
  let runtime: Runtime;
  let out: string;
  let result: TrainingResult;
  let events: RstarEvent[];

  beforeAll(async () => {
    FIXTURE_CKPT = await ensureSftCheckpoint();
    out = mkdtempSync(join(tmpdir(), 'rstar-train-e2e-'));
    runtime = await connectRuntime({ natsUrl: '', databaseUrl: '' });
    const config = parseRunConfig({
      name: 'e2e-sft', seed: 5, policy: { model: { layers: 1, dModel: 32, heads: 2, context: 160 } },
      data: { source: 'tasks', heldOutSize: 4, trainSize: 32 },
      sft: { steps: 6, batchSize: 8, lr: 0.003, warmupSteps: 1 },
      stages: [{ name: 'rl-1', steps: 2, promptsPerStep: 2, groupSize: 2, oversample: 2, maxResponseTokens: 80, maxTurns: 2, lr: 0.0005 }],
      eval: { samples: 1, temperature: 0, maxTurns: 2, maxResponseTokens: 80 },
      trainer: { warmupSteps: 1 },
    });
    result = await runTraining(config, { runtime, outDir: out, sandboxWorkers: 1 });
    events = await readRunEvents(runtime.store, result.runId);
  }, SFT_CHECKPOINT_TIMEOUT_MS + 300_000);

  afterAll(async () => {
    await runtime?.close();
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('runs SFT, evaluates pass@1 before and after, and archives every step of the run', () => {
    expect(result.mode).toBe('standalone');
    expect(result.sft?.steps).toBe(6);
    expect(existsSync(join(result.sft!.checkpoint, 'weights.bin'))).toBe(true);
    expect(result.passAt1Before?.prompts).toBe(4);
    expect(result.passAt1After?.prompts).toBe(4);
    expect(result.steps.map((s) => s.step)).toEqual([0, 1]);
    expect(count(events, 'RunStarted')).toBe(1);
    expect(count(events, 'RunCompleted')).toBe(1);
    for (const step of [0, 1]) {
      expect(count(events, 'StepStarted', step)).toBe(1);
      expect(count(events, 'StepCompleted', step)).toBe(1);
      // 2 prompts x 2G = 4 samples each: every rollout requested, completed, rewarded; every group resampled.
      expect(count(events, 'RolloutRequested', step)).toBe(8);
      expect(count(events, 'RolloutCompleted', step)).toBe(8);
      expect(count(events, 'GroupResampled', step)).toBe(2);
    }
    const rolloutIds = new Set(events.filter((e) => e.type === 'RolloutCompleted').map((e) => (e.data as { rolloutId: string }).rolloutId));
    const rewarded = events.filter((e) => e.type === 'RewardAssigned').map((e) => (e.data as { rolloutId: string }).rolloutId);
    expect(new Set(rewarded)).toEqual(rolloutIds);
    expect(rewarded.length).toBe(rolloutIds.size);
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('rstar train from a checkpoint, archived in Postgres', () => {
  let runtime: Runtime;
  let out: string;
  let result: TrainingResult;
  let events: RstarEvent[];
  const schema = `train_e2e_${process.pid}_${Date.now()}`;

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'rstar-train-e2e-'));
    runtime = await connectRuntime({ natsUrl: '', databaseUrl: process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test', schema, archive: true });
    const config = parseRunConfig({
      name: 'e2e-rl', seed: 11, policy: { model: { layers: 2, dModel: 64, heads: 4, context: 160 }, init: 'checkpoint', checkpoint: FIXTURE_CKPT },
      data: { source: 'tasks', heldOutSize: 4, trainSize: 256 },
      stages: [{ name: 'rl-1', steps: 2, promptsPerStep: 8, groupSize: 2, oversample: 2, maxResponseTokens: 112, maxTurns: 3, lr: 0.0005 }],
      trainer: { warmupSteps: 1 },
    });
    result = await runTraining(config, { runtime, outDir: out, sandboxWorkers: 1, skipEval: true });
    events = await readRunEvents(runtime.store, result.runId);
  }, 300_000);

  afterAll(async () => {
    if (runtime) {
      await runtime.flush();
      await (runtime.store as unknown as { pool: { query(q: string): Promise<unknown> } }).pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
      await runtime.close();
    }
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('trains on mixed-reward groups and every step batch is rebuilt exactly from the archived events', () => {
    expect(result.sft).toBeNull();
    const optimized = events.filter((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized');
    expect(optimized.length).toBeGreaterThan(0);
    for (const o of optimized) {
      const batch = rebuildStepBatch(events, o.data.step);
      expect(batch.hash).toBe(o.data.batchHash);
      expect(batch.tokens).toBe(o.data.tokens);
      expect(batch.sequences.length).toBe(o.data.rollouts);
      expect(existsSync(join(o.data.checkpointUri, 'weights.bin'))).toBe(true);
    }
    expect(count(events, 'PolicyUpdated')).toBe(optimized.length);
    expect(result.policyVersion).toBe(optimized.length);
    expect(count(events, 'StepCompleted')).toBe(2);
  });
});
