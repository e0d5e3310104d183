import type { EventData, RstarEvent } from '@rstar/contracts';
import { indexRun, type RunIndex } from './run.index';

/** A rollout a resumed run can reuse instead of generating it again. */
export interface CompletedRollout {
  rolloutId: string;
  groupId: string;
  promptIdx: number;
  sampleIdx: number;
  completed: EventData<'RolloutCompleted'>;
  /** Its reward when it was graded before the stop, else null (grade it again). */
  reward: EventData<'RewardAssigned'> | null;
}

/** Where a step stands in the log: what `rstar train --resume` reuses and what it must request again. */
export interface StepResumeState {
  step: number;
  /** Rollouts with a RolloutCompleted, in (prompt, sample) order. */
  completed: CompletedRollout[];
  /** Requested rollouts without a RolloutCompleted, in (prompt, sample) order: re-publish these. */
  pending: EventData<'RolloutRequested'>[];
  /** Groups already resampled (their GroupResampled is on the log). */
  resampledGroups: string[];
}

/**
 * Resume support: the rollouts of `step` that were completed and recorded before a run
 * stopped, so `rstar train --resume RUN` reuses them instead of generating them again. Every event id
 * is deterministic, so re-publishing a reused rollout's events is harmless (the bus drops the copies).
 * `events`: the run's events (any order) or its index; `runId` when they hold several runs.
 */
export function completedRollouts(events: Iterable<RstarEvent> | RunIndex, step: number, runId?: string): CompletedRollout[] {
  return stepResumeState(events, step, runId).completed;
}

/** The full {@link StepResumeState} of `step` (see {@link completedRollouts}). */
export function stepResumeState(events: Iterable<RstarEvent> | RunIndex, step: number, runId?: string): StepResumeState {
  const ix = events instanceof Object && (events as RunIndex).rollouts instanceof Map ? (events as RunIndex) : indexRun(events as Iterable<RstarEvent>, runId);
  const rec = ix.steps.find((s) => s.step === step);
  const out: StepResumeState = { step, completed: [], pending: [], resampledGroups: [] };
  if (!rec) return out;
  for (const gid of rec.groupIds) {
    const g = ix.groups.get(gid)!;
    if (g.resampled) out.resampledGroups.push(gid);
    for (const rid of g.rolloutIds) {
      const r = ix.rollouts.get(rid)!;
      if (r.completed) {
        const { eventId: _c, ...completed } = r.completed;
        const reward = r.reward ? (({ eventId: _r, ...w }) => w)(r.reward) : null;
        out.completed.push({ rolloutId: rid, groupId: gid, promptIdx: r.promptIdx, sampleIdx: r.sampleIdx, completed, reward });
      } else if (r.requested) {
        const { eventId: _q, ...requested } = r.requested;
        out.pending.push(requested);
      }
    }
  }
  return out;
}
