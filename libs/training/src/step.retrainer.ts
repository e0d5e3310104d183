import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseRunConfig } from '@rstar/contracts';
import { PolicyModel } from '@rstar/policy';
import type { RunIndex, StepRetrainer } from '@rstar/replay';
import { REPO_ROOT, StagedBuiltinTrainer } from '@rstar/step-driver';

/**
 * The checkpoint a recorded run's policy version `version` was served from: its `PolicyUpdated`
 * checkpoint for version > 0; for version 0 the run's initial weights: `policy.checkpoint` (init
 * `checkpoint`), else the SFT output `<runDir>/checkpoints/sft` (standalone) or `<runDir>/sft`
 * (distributed: the optimization service's `<checkpointRoot>/<runId>/sft`). Null when the run records no
 * config or the directory does not exist.
 */
export function policyCheckpointOf(ix: RunIndex, version: number, runDir: string): string | null {
  if (version > 0) {
    const uri = ix.policyUpdates.find((p) => p.version === version)?.checkpointUri;
    return uri && existsSync(uri) ? uri : null;
  }
  const raw = ix.started?.config;
  if (!raw) return null;
  const config = parseRunConfig(raw);
  const candidates = config.policy.init === 'checkpoint' && config.policy.checkpoint
    ? [resolve(REPO_ROOT, config.policy.checkpoint)]
    : [join(runDir, 'checkpoints', 'sft'), join(runDir, 'sft')];
  return candidates.find((d) => existsSync(join(d, 'model.json'))) ?? null;
}

/**
 * The built-in policy's re-trainer for `verify --retrain`: load the checkpoint the step started from
 * ({@link policyCheckpointOf}), run the step's one GRPO update on the rebuilt batch exactly as
 * `rstar train` does (`StagedBuiltinTrainer`, the stage's learning rate), save it to a temporary
 * directory and return its content hash. Undefined for a run without config or another trainer; the
 * returned function yields null (skipped) when the start checkpoint is missing.
 */
export function builtinRetrainer(ix: RunIndex, runDir: string): StepRetrainer | undefined {
  const raw = ix.started?.config;
  if (!raw) return undefined;
  const config = parseRunConfig(raw);
  if (config.trainer.kind !== 'builtin') return undefined;
  return async ({ step, batch, startCheckpoint }) => {
    const dir = startCheckpoint ? (existsSync(startCheckpoint.checkpointUri) ? startCheckpoint.checkpointUri : null) : policyCheckpointOf(ix, 0, runDir);
    if (!dir) return null;
    const model = await PolicyModel.load(dir);
    const out = mkdtempSync(join(tmpdir(), 'rstar-retrain-'));
    try {
      const trainer = new StagedBuiltinTrainer(model, config, startCheckpoint?.version ?? 0, startCheckpoint === null);
      trainer.beginStep(step);
      await trainer.trainStep(batch);
      return { checkpointHash: (await trainer.save(join(out, `step-${step}`))).hash };
    } finally {
      model.dispose();
      rmSync(out, { recursive: true, force: true });
    }
  };
}
