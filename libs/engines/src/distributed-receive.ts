import { EngineResponseError } from './engine.errors';
import type { EngineAdapter } from './engine.port';
import type { WeightBucket } from './distributed-sync';
import { checkLoadedWeights, type PolicyWeights } from './weight-sync';

/** The engines' half of one distributed sync, as `PolicyUpdated.sync` carries it (docs/design/protocol.md §9). */
export interface DistributedUpdate {
  groupName: string;
  buckets: readonly WeightBucket[];
}

/**
 * Every engine receives `update.buckets` in order over the group `update.groupName` while the trainer
 * broadcasts them (the other half, driven elsewhere); the last bucket carries the weight version
 * (`policy.version` as a decimal string) and flushes the prefix cache. Then each engine must report holding
 * that version ({@link checkLoadedWeights}). Engines receive concurrently (each broadcast needs every rank).
 * @throws EngineResponseError naming an engine that cannot join a group (no `weightTransfer`) or whose
 * receive failed; WeightSyncError when an engine then reports another version.
 */
export async function receiveDistributedWeights(engines: readonly EngineAdapter[], update: DistributedUpdate, policy: PolicyWeights): Promise<void> {
  const transfers = engines.map((a) => {
    if (!a.weightTransfer) throw new EngineResponseError(a.id, `engines of kind ${a.kind} cannot receive weights over a torch.distributed group (set trainer.weightSync: disk)`);
    return { a, t: a.weightTransfer() };
  });
  await Promise.all(transfers.map(async ({ a, t }) => {
    for (const [k, b] of update.buckets.entries()) {
      const last = k === update.buckets.length - 1;
      await t.receiveBucket(b, { groupName: update.groupName, ...(last ? { weightVersion: String(policy.version), flushCache: true } : {}) });
    }
    await t.finish();
    // The weights came from memory, not from the checkpoint: only the version can be checked here (the probe checks the values).
    const mismatch = checkLoadedWeights(a, { version: policy.version, checkpointHash: null }, a.loadedWeights ? await a.loadedWeights() : null);
    if (mismatch) throw mismatch;
  }));
}
