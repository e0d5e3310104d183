import { ids, makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { NotInRunError, ReplayError } from './errors';
import { stepRolloutVersions } from './rollout-versions.projection';
import { indexRun, type RunIndex } from './run.index';

export interface RerunOptions {
  step: number;
  /** Id of the new run (default: a fresh UUIDv7). */
  newRunId?: string;
  /** `mode` recorded in the new RunStarted (default: the original's). */
  mode?: 'standalone' | 'distributed';
  codeVersion?: string;
  now?: () => Date;
}

/** The events that re-run a recorded step, and the new run's id. */
export interface RerunPlan {
  runId: string;
  originalRunId: string;
  step: number;
  /** RunStarted (with `rerunOf`), StepStarted, then every RolloutRequested of the step. */
  events: RstarEvent[];
  /**
   * The step's rollouts by the policy version that started them in the original run
   * (`RolloutCompleted.policyVersion`, else the request's), lowest version first; rollout ids are the
   * rerun's (a rollout sampled under several versions is in its starting version's phase and listed in
   * {@link multiVersion}). One phase for a synchronous step. An asynchronous step (`async.maxStaleness` >= 1) is
   * requested ahead of the trainer, so an update can reach the engines between its rollouts: a rerun
   * that is to reproduce them serves each phase's rollouts on that phase's weights
   * ({@link rerunPhases}).
   */
  phases: RerunPhase[];
  /**
   * The step's partial rollouts that an update reached mid-rollout (sampled under several versions,
   * `TurnGenerated.segments`): the rerun cannot reproduce them, since it serves each rollout one version.
   * Each is re-run under its starting version (in that version's phase), so its tokens after the original's
   * update are expected to differ. Empty for a step without such rollouts.
   */
  multiVersion: MultiVersionRerun[];
}

/** A rollout of the original step sampled under several policy versions, and how its rerun differs. */
export interface MultiVersionRerun {
  /** The rerun's rollout id. */
  rolloutId: string;
  originalRolloutId: string;
  /** Every version that sampled it in the original, ascending. */
  versions: number[];
  /** The version the rerun samples it under: the one it started under. */
  rerunUnder: number;
  /** Why it cannot be reproduced exactly, one line. */
  reason: string;
}

/** Rollouts of a rerun that the original sampled under one policy version. */
export interface RerunPhase {
  policyVersion: number;
  /** The rerun's rollout ids, in request order. */
  rolloutIds: string[];
}

/**
 * The rollouts of recorded step `step`, grouped by the policy version that sampled each in the original
 * run (see {@link RerunPlan.phases}), with rollout ids re-derived for `rerunRunId` (the original's own ids
 * when it is the original run id). A partial rollout (turns continued under a newer version,
 * `TurnGenerated.segments`) belongs to the phase of the version it started under ({@link multiVersionRollouts} lists it).
 * Throws {@link NotInRunError} for an unknown step.
 */
export function rerunPhases(ix: RunIndex, step: number, rerunRunId: string = ix.runId): RerunPhase[] {
  const rec = ix.steps.find((s) => s.step === step);
  if (!rec) throw new NotInRunError('step', step, ix.runId, ix.steps.map((s) => s.step));
  const byVersion = new Map<number, string[]>();
  for (const id of rec.groupIds.flatMap((g) => ix.groups.get(g)!.rolloutIds)) {
    const r = ix.rollouts.get(id)!;
    if (!r.requested) continue;
    const v = r.completed?.policyVersion ?? r.requested.policyVersion;
    const ids_ = byVersion.get(v) ?? [];
    ids_.push(ids.rollout(rerunRunId, r.requested.step, r.requested.promptIdx, r.requested.sampleIdx));
    byVersion.set(v, ids_);
  }
  return [...byVersion.entries()].sort(([a], [b]) => a - b).map(([policyVersion, rolloutIds]) => ({ policyVersion, rolloutIds }));
}

/**
 * The rollouts of recorded step `step` sampled under more than one policy version (partial rollouts an
 * update reached, {@link stepRolloutVersions}), with the ids of rerun `rerunRunId` (pure). Their rerun serves
 * them their starting version only: see {@link RerunPlan.multiVersion}.
 */
export function multiVersionRollouts(ix: RunIndex, step: number, rerunRunId: string = ix.runId): MultiVersionRerun[] {
  const out: MultiVersionRerun[] = [];
  for (const [id, v] of stepRolloutVersions(ix, step)) {
    const q = ix.rollouts.get(id)!.requested;
    if (!v.partial || !q) continue;
    const later = v.versions.filter((x) => x !== v.startedAt).map((x) => `v${x}`).join(', ');
    out.push({
      rolloutId: ids.rollout(rerunRunId, q.step, q.promptIdx, q.sampleIdx), originalRolloutId: id, versions: v.versions, rerunUnder: v.startedAt,
      reason: `sampled under ${v.versions.map((x) => `v${x}`).join('→')} (a weight update reached it mid-rollout); the rerun serves each rollout one version, ` +
        `so it is re-run under its starting version v${v.startedAt} and its tokens sampled under ${later} in the original are not expected to match`,
    });
  }
  return out;
}

const PRODUCER = 'replay';

/**
 * Re-run a recorded step: the step's inputs (its StepStarted and every RolloutRequested:
 * prompt, gold, sampling params with their seeds, budget, policy version, RoC policy) re-issued under a
 * new run id, linked to the original by `RunStarted.rerunOf`. Rollout and group ids are re-derived for
 * the new run with the same step, prompt and sample indices, so the two runs line up one to one.
 * Throws {@link NotInRunError} for an unknown step, {@link ReplayError} when the step has no request.
 */
export function rerunStep(events: Iterable<RstarEvent> | RunIndex, opts: RerunOptions): RerunPlan {
  const ix = (events as RunIndex).rollouts instanceof Map ? (events as RunIndex) : indexRun(events as Iterable<RstarEvent>);
  const rec = ix.steps.find((s) => s.step === opts.step);
  if (!rec) throw new NotInRunError('step', opts.step, ix.runId, ix.steps.map((s) => s.step));
  const runId = opts.newRunId ?? ids.newRun();
  const requests = rec.groupIds.flatMap((g) => ix.groups.get(g)!.rolloutIds).map((id) => ix.rollouts.get(id)!.requested).filter((q) => q !== null);
  if (requests.length === 0) throw new ReplayError('nothing_to_rerun', `step ${opts.step} of run ${ix.runId} has no RolloutRequested in the log`, 'step');
  const common = { runId, producer: PRODUCER, now: opts.now };
  const started = makeEvent('RunStarted', {
    ...common, streamId: streams.run(runId), key: runId,
    data: {
      config: ix.started?.config ?? {}, seed: ix.started?.seed ?? 0, codeVersion: opts.codeVersion ?? ix.started?.codeVersion ?? 'dev',
      mode: opts.mode ?? ix.started?.mode ?? 'standalone', rerunOf: { runId: ix.runId, step: opts.step },
    },
  });
  const s = rec.started;
  const stepStarted = makeEvent('StepStarted', {
    ...common, streamId: streams.step(runId, opts.step), key: `${runId}:${opts.step}`, causedBy: started,
    data: s ? { step: s.step, stage: s.stage, promptIds: s.promptIds, policyVersion: s.policyVersion }
      : { step: opts.step, stage: 'rerun', promptIds: [...new Set(requests.map((q) => q.promptId))], policyVersion: requests[0].policyVersion },
  });
  const rollouts = requests.map((q) => {
    const { eventId: _e, ...data } = q;
    const rolloutId = ids.rollout(runId, q.step, q.promptIdx, q.sampleIdx);
    return makeEvent('RolloutRequested', {
      ...common, streamId: streams.rollout(rolloutId), key: rolloutId, causedBy: stepStarted,
      data: { ...data, rolloutId, groupId: ids.group(runId, q.step, q.promptIdx) },
    });
  });
  return {
    runId, originalRunId: ix.runId, step: opts.step, events: [started, stepStarted, ...rollouts],
    phases: rerunPhases(ix, opts.step, runId), multiVersion: multiVersionRollouts(ix, opts.step, runId),
  };
}
