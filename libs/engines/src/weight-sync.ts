import { EngineError } from './engine.errors';
import type { LoadedWeights } from './engine.port';

/**
 * A policy version the engines must hold: the `PolicyUpdated` it came from (hash = sha256 of the checkpoint
 * manifest; null when unknown, e.g. a run's start weights, version 0).
 */
export interface PolicyWeights {
  version: number;
  checkpointHash: string | null;
}

/**
 * An engine reports other weights than the policy it was told to hold: another weight version (after a
 * reload, or on a generation) or another checkpoint manifest hash. The message names the engine and both
 * sides. Never retried: the run is failed loudly.
 */
export class WeightSyncError extends EngineError {
  constructor(
    engineId: string,
    message: string,
    readonly expected: { weightVersion: string | null; manifestHash: string | null },
    readonly reported: LoadedWeights,
  ) {
    super('weight_sync_mismatch', `engine ${engineId}: ${message}`, engineId);
  }
}

/**
 * The weight version an engine of `kind` must report while holding `policy`: the builtin engine reports
 * the checkpoint's content hash as its version; SGLang-speaking engines the version they were loaded with
 * (`weight_version` = the policy version as a decimal string).
 */
export function expectedWeightVersion(kind: string, policy: PolicyWeights): string | null {
  return kind === 'builtin' ? policy.checkpointHash : String(policy.version);
}

/**
 * Compare what engine `engine` reports (`reported`, null = it reports nothing) with `policy`: the weight
 * version must be {@link expectedWeightVersion}, and a reported manifest hash must equal the policy's
 * checkpoint hash (SGLang engines; the reference engine reports it, real SGLang does not).
 * Returns the mismatch, or null when everything reported agrees.
 */
export function checkLoadedWeights(engine: { id: string; kind: string }, policy: PolicyWeights, reported: LoadedWeights | null): WeightSyncError | null {
  if (!reported) return null;
  const want = expectedWeightVersion(engine.kind, policy);
  const wantManifest = engine.kind === 'builtin' ? null : policy.checkpointHash;
  const badVersion = want !== null && reported.weightVersion !== null && reported.weightVersion !== want;
  const badManifest = wantManifest !== null && reported.manifestHash !== null && reported.manifestHash !== wantManifest;
  if (!badVersion && !badManifest) return null;
  return new WeightSyncError(
    engine.id,
    `reports weight version ${JSON.stringify(reported.weightVersion)} and manifest ${reported.manifestHash ?? '(none)'}, ` +
      `but policy version ${policy.version} (weight version ${JSON.stringify(want)}, checkpoint manifest ${policy.checkpointHash ?? '(not known)'}) was loaded; ` +
      'the engine does not serve the policy being trained (reloaded by something else, or a stale checkpoint)',
    { weightVersion: want, manifestHash: wantManifest },
    reported,
  );
}
