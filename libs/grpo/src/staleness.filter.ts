import { GrpoInputError } from './errors';

/** A kept rollout with the policy version it started under (RolloutCompleted.policyVersion). */
export interface VersionedRollout {
  rolloutId: string;
  policyVersion: number;
}

/** One rollout's staleness when its step trains: trainer version minus the version it started under. */
export interface StalenessVerdict {
  rolloutId: string;
  policyVersion: number;
  staleness: number;
}

/** What {@link splitByStaleness} decided: the rollouts that may enter the batch and the ones to discard. */
export interface StalenessSplit {
  fresh: StalenessVerdict[];
  stale: StalenessVerdict[];
}

/**
 * Bounded staleness (AReaL's η, docs/design/protocol.md §10): a rollout started under policy version v
 * may be trained while the trainer holds version <= v + η. Splits `rollouts` (order kept) into those
 * within the bound and those older. `trainPolicyVersion` = the trainer's version before the step's
 * update; staleness = trainPolicyVersion - v (0 in a synchronous run). Pure; both the step driver and
 * `replay verify` decide with it. Throws {@link GrpoInputError} for a negative or fractional η.
 */
export function splitByStaleness(rollouts: readonly VersionedRollout[], trainPolicyVersion: number, maxStaleness: number): StalenessSplit {
  if (!Number.isInteger(maxStaleness) || maxStaleness < 0) {
    throw new GrpoInputError(`maxStaleness must be a whole number >= 0, got ${maxStaleness}`, 'async.maxStaleness');
  }
  const out: StalenessSplit = { fresh: [], stale: [] };
  for (const r of rollouts) {
    const v = { rolloutId: r.rolloutId, policyVersion: r.policyVersion, staleness: trainPolicyVersion - r.policyVersion };
    (v.staleness > maxStaleness ? out.stale : out.fresh).push(v);
  }
  return out;
}
