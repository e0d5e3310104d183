import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventData } from '@rstar/contracts';
import { buildTrainingBatch, writeBatchV2, type TrainingBatch } from '@rstar/grpo';
import type { RunIndex } from '@rstar/replay';
import { workerCheckpointChecker } from './worker-checkpoint.checker';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const RUN = 'run-ckpt';
const workerConfig = { stages: [{ name: 'rl', steps: 1, promptsPerStep: 1, maxResponseTokens: 16, lr: 0.001 }], policy: { kind: 'hf', path: '/m' }, trainer: { kind: 'worker' }, engines: [{ kind: 'sglang', url: 'http://127.0.0.1:30000' }] };
const indexOf = (config: Record<string, unknown>) => ({ runId: RUN, started: { config } }) as unknown as RunIndex;

const batch: TrainingBatch = buildTrainingBatch([
  { groupId: 'g0', rollouts: [
    { rolloutId: 'r0', promptTokenIds: [1, 2], responseTokenIds: [3, 4], lossMask: [1, 1], logprobs: [-0.5, -0.25], reward: 1 },
    { rolloutId: 'r1', promptTokenIds: [1, 2], responseTokenIds: [5], lossMask: [1], logprobs: [-1], reward: 0 },
  ] },
]);

/** A checkpoint directory as the worker writes it: files, manifest.json (sorted keys), STABLE; returns the StepOptimized data. */
function checkpoint(dir: string, batchHash: string): EventData<'StepOptimized'> {
  writeFileSync(join(dir, 'model.safetensors'), Buffer.from([1, 2, 3, 4]));
  writeFileSync(join(dir, 'config.json'), '{"model_type":"qwen2"}');
  const files: Record<string, { bytes: number; sha256: string }> = {};
  for (const f of readdirSync(dir).sort()) files[f] = { bytes: readFileSync(join(dir, f)).length, sha256: sha(readFileSync(join(dir, f))) };
  const manifest = JSON.stringify({ batchHash, files, format: 'rstar.checkpoint-manifest/1', policyVersion: 1, runId: RUN, step: 0 });
  writeFileSync(join(dir, 'manifest.json'), manifest);
  writeFileSync(join(dir, 'STABLE'), '');
  return { step: 0, newPolicyVersion: 1, checkpointUri: dir, checkpointHash: sha(manifest), batchFileHash: batchHash } as EventData<'StepOptimized'>;
}

describe('workerCheckpointChecker (replay verify of a run trained on the trainer worker)', () => {
  let dir: string;
  let v2Hash: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rstar-ckpt-check-'));
    v2Hash = writeBatchV2(batch, { runId: RUN, step: 0, policyVersion: 0 }).batchHash;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is undefined for a run of the builtin trainer', () => {
    expect(workerCheckpointChecker(indexOf({ stages: workerConfig.stages }))).toBeUndefined();
  });

  it('is undefined for a history whose RunStarted holds no run config (a synthetic run)', () => {
    expect(workerCheckpointChecker(indexOf({ seed: 1, steps: 2, promptsPerStep: 3, samples: 4, keep: 2 }))).toBeUndefined();
  });

  it('finds nothing when the batch file and every checkpoint file hash as recorded', async () => {
    const optimized = checkpoint(dir, v2Hash);
    expect(await workerCheckpointChecker(indexOf(workerConfig))!({ step: 0, batch, startVersion: 0, optimized })).toEqual([]);
  });

  it('names a checkpoint file whose bytes changed, and a missing STABLE marker', async () => {
    const optimized = checkpoint(dir, v2Hash);
    appendFileSync(join(dir, 'model.safetensors'), Buffer.from([0]));
    unlinkSync(join(dir, 'STABLE'));
    const found = await workerCheckpointChecker(indexOf(workerConfig))!({ step: 0, batch, startVersion: 0, optimized });
    expect(found!.map((f) => f.field).sort()).toEqual(['checkpointHash', 'checkpointUri']);
    expect(found!.find((f) => f.field === 'checkpointHash')!.message).toMatch(/model\.safetensors/);
  });

  it('names a batch re-derived from the log that is not the file the worker trained on', async () => {
    const optimized = checkpoint(dir, v2Hash);
    const found = await workerCheckpointChecker(indexOf(workerConfig))!({ step: 0, batch, startVersion: 1, optimized });
    expect(found!.map((f) => f.field)).toEqual(['batchFileHash', 'batchFileHash']);
    expect(found![0]!.recorded).toBe(v2Hash);
  });

  it('skips (null) a step whose checkpoint directory is gone', async () => {
    const optimized = checkpoint(dir, v2Hash);
    rmSync(dir, { recursive: true, force: true });
    expect(await workerCheckpointChecker(indexOf(workerConfig))!({ step: 0, batch, startVersion: 0, optimized })).toBeNull();
  });
});
