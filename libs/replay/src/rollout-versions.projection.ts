import type { RunIndex } from './run.index';

/** What one turn says about the policy versions that sampled it (`TurnGenerated.policyVersion` and `segments`). */
export interface TurnVersions {
  /** The turn's (first segment's) version; absent in runs recorded before it. */
  policyVersion?: number | null;
  /** Partial rollouts: one entry per version that sampled a stretch of the turn (protocol.md §8). */
  segments?: ReadonlyArray<{ policyVersion: number }> | null;
}

/**
 * The policy versions of one rollout of a step (docs/design/protocol.md §8 and §10): the version it
 * started under, every version that sampled its tokens, the trainer's version when its step trained, and
 * the staleness between the two.
 */
export interface RolloutVersions {
  /** The version it started under (`RolloutCompleted.policyVersion`, else its request's). */
  startedAt: number;
  /**
   * Distinct versions that sampled its tokens, ascending; just `[startedAt]` for a rollout whose turns carry
   * no later version (every synchronous rollout, and a partial one that no update reached).
   */
  versions: number[];
  /**
   * The trainer's version when the step trained (`StepOptimized.newPolicyVersion - 1`); for a rollout
   * discarded as stale, the trainer's version its `RolloutDiscarded` names. Null while the step has not trained.
   */
  trainedAt: number | null;
  /** `trainedAt - startedAt` (versions the rollout lagged the trainer); null while `trainedAt` is. */
  staleness: number | null;
  /** Sampled under more than one version (a partial rollout that an update reached mid-rollout). */
  partial: boolean;
  /** Left out of its step's batch as stale (`RolloutDiscarded`): `trainedAt` is then the trainer's version it was discarded at. */
  discarded: boolean;
}

/**
 * Distinct policy versions that sampled a rollout, ascending: `started` plus each turn's version and each
 * of its segments' (pure). Turns recorded without a version add nothing.
 */
export function sampledVersions(started: number, turns: readonly TurnVersions[]): number[] {
  const seen = new Set<number>([started]);
  for (const t of turns) {
    if (typeof t.policyVersion === 'number') seen.add(t.policyVersion);
    for (const s of t.segments ?? []) seen.add(s.policyVersion);
  }
  return [...seen].sort((a, b) => a - b);
}

/**
 * {@link RolloutVersions} from the started version, the turns, the trainer's version (null before the step
 * trained) and whether the rollout was discarded as stale (pure).
 */
export function rolloutVersions(started: number, turns: readonly TurnVersions[], trainedAt: number | null, discarded = false): RolloutVersions {
  const versions = sampledVersions(started, turns);
  return { startedAt: started, versions, trainedAt, staleness: trainedAt === null ? null : trainedAt - started, partial: versions.length > 1, discarded };
}

/**
 * The versions of every completed rollout of step `step` (started under its `RolloutCompleted.policyVersion`;
 * a rollout still running is left out, as the dashboard's step page shows it without versions), keyed by
 * rollout id, from the run's index with its turns (pure). A step that has not trained yet gives `trainedAt`
 * null, except for rollouts already discarded as stale (their `RolloutDiscarded` names it).
 */
export function stepRolloutVersions(ix: RunIndex, step: number): Map<string, RolloutVersions> {
  const rec = ix.steps.find((s) => s.step === step);
  const trainer = rec?.optimized ? rec.optimized.newPolicyVersion - 1 : null;
  const out = new Map<string, RolloutVersions>();
  for (const gid of rec?.groupIds ?? []) {
    for (const id of ix.groups.get(gid)!.rolloutIds) {
      const r = ix.rollouts.get(id)!;
      if (!r.completed) continue;
      out.set(id, rolloutVersions(r.completed.policyVersion, r.turns, r.discarded?.trainPolicyVersion ?? trainer, r.discarded !== null));
    }
  }
  return out;
}

/**
 * `v3→v4 · trained at v4 · staleness 1`: the sampled versions, then the trainer's version and the staleness
 * (`discarded at v5 · staleness 2` for a stale rollout, `not trained yet` before its step trained).
 */
export function formatRolloutVersions(v: RolloutVersions): string {
  const sampled = v.versions.map((x) => `v${x}`).join('→');
  if (v.trainedAt === null) return `${sampled} · not trained yet`;
  return `${sampled} · ${v.discarded ? 'discarded' : 'trained'} at v${v.trainedAt} · staleness ${v.staleness}`;
}
