import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseRunConfig } from '@rstar/contracts';
import { writeBatchV2 } from '@rstar/grpo';
import type { CheckpointChecker, RunIndex } from '@rstar/replay';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * `verify`'s checkpoint check for runs trained on the trainer worker (`trainer.kind: worker`): for each
 * optimized step, the batch re-derived from the log is written again as the v2 safetensors file
 * (`writeBatchV2`, the bytes the worker trained on) and its sha256 must equal `StepOptimized.batchFileHash`;
 * the checkpoint directory must be complete (`STABLE`), its `manifest.json` must hash to
 * `StepOptimized.checkpointHash`, name that batch file, the run, the step and the new policy version, and
 * every file must match its sha256 in the manifest. Undefined for other runs; a step whose checkpoint
 * directory is gone is skipped (null).
 */
export function workerCheckpointChecker(ix: RunIndex): CheckpointChecker | undefined {
  const raw = ix.started?.config;
  if (!raw || trainerKindOf(raw) !== 'worker') return undefined;
  return async ({ step, batch, startVersion, optimized: o }) => {
    const found: Array<{ field: string; recorded: unknown; recomputed: unknown; message: string }> = [];
    const v2 = writeBatchV2(batch, { runId: ix.runId, step, policyVersion: startVersion });
    if (o.batchFileHash !== undefined && v2.batchHash !== o.batchFileHash) {
      found.push({ field: 'batchFileHash', recorded: o.batchFileHash, recomputed: v2.batchHash, message: `the batch re-derived from the log writes a safetensors file with sha256 ${v2.batchHash}, the worker trained on ${o.batchFileHash}` });
    }
    const dir = o.checkpointUri;
    if (!existsSync(join(dir, 'manifest.json'))) return null;
    const bytes = readFileSync(join(dir, 'manifest.json'));
    const hash = sha256(bytes);
    if (hash !== o.checkpointHash) found.push({ field: 'checkpointHash', recorded: o.checkpointHash, recomputed: hash, message: `${dir}/manifest.json hashes to ${hash}` });
    if (!existsSync(join(dir, 'STABLE'))) found.push({ field: 'checkpointUri', recorded: dir, recomputed: null, message: `${dir} has no STABLE marker (incompletely written)` });
    const m = JSON.parse(bytes.toString('utf8')) as { runId?: string; step?: number; policyVersion?: number; batchHash?: string; files?: Record<string, { sha256: string }> };
    const expect: Array<[string, unknown, unknown]> = [['runId', ix.runId, m.runId], ['step', step, m.step], ['newPolicyVersion', o.newPolicyVersion, m.policyVersion], ['batchFileHash', v2.batchHash, m.batchHash]];
    for (const [field, want, got] of expect) {
      if (want !== got) found.push({ field, recorded: want, recomputed: got, message: `the checkpoint's manifest says ${JSON.stringify(got)}, the log ${JSON.stringify(want)}` });
    }
    for (const [name, f] of Object.entries(m.files ?? {})) {
      const p = join(dir, name);
      const got = existsSync(p) ? sha256(readFileSync(p)) : null;
      if (got !== f.sha256) found.push({ field: 'checkpointHash', recorded: f.sha256, recomputed: got, message: `${name} of ${dir} ${got === null ? 'is missing' : `has sha256 ${got}`}, the manifest says ${f.sha256}` });
    }
    return found;
  };
}

/** The trainer kind of a recorded config; null when it is not a run config (a synthetic history's). */
function trainerKindOf(raw: unknown): string | null {
  try {
    return parseRunConfig(raw).trainer.kind;
  } catch {
    return null;
  }
}
