import type { EventData, RstarEvent } from '@rstar/contracts';

/** Where a run stands, rebuilt from its events. */
export interface ResumePoint {
  started: boolean;
  /** RunCompleted or RunFailed is on the log. */
  finished: boolean;
  /** The next step to run (= number of steps with a StepCompleted, steps being sequential). */
  nextStep: number;
  /**
   * Latest PolicyUpdated whose StepOptimized is on the log (one published ahead of its StepOptimized and cut
   * off by a crash is left out), or null before the first update: the trainer must load this checkpoint.
   */
  policy: EventData<'PolicyUpdated'> | null;
  /** StepOptimized of the next step when it was written before a crash: do not train that step again. */
  optimizedNext: EventData<'StepOptimized'> | null;
  /**
   * The in-flight window: the `StepStarted` of every step requested but not completed (with η >= 1 up to
   * η + 1 of them; docs/design/protocol.md §10). A resumed driver re-issues these steps' requests from
   * their recorded prompts and policy version, so every re-published event is identical to the first
   * (same id, same data) and is dropped as a duplicate.
   */
  inFlight: Map<number, EventData<'StepStarted'>>;
  /**
   * Prompt ids every sampled rollout solved (all-equal groups with reward 1), for `filterSolved` stages,
   * each with the first step that solved it: step t excludes those solved before step t - η, the ones
   * its driver knew when it picked t's prompts, so a resumed run picks exactly what the first one did.
   */
  solvedPromptIds: Map<string, number>;
}

/**
 * Rebuild a run's {@link ResumePoint} from its events (any order; duplicates harmless). The driver
 * resumes at `nextStep`, skipping training when `optimizedNext` shows the update already happened, and
 * re-requests the steps of `inFlight` as they were recorded.
 */
export function resumePoint(events: readonly RstarEvent[]): ResumePoint {
  const completed = new Set<number>();
  const optimized = new Map<number, EventData<'StepOptimized'>>();
  const startedSteps = new Map<number, EventData<'StepStarted'>>();
  let policy: EventData<'PolicyUpdated'> | null = null;
  let started = false;
  let finished = false;
  const solved = new Map<string, number>();
  for (const e of events) {
    switch (e.type) {
      case 'RunStarted': started = true; break;
      case 'RunCompleted': case 'RunFailed': finished = true; break;
      case 'StepStarted': startedSteps.set(e.data.step, e.data); break;
      case 'StepCompleted': completed.add(e.data.step); break;
      case 'StepOptimized': optimized.set(e.data.step, e.data); break;
      case 'PolicyUpdated': if (!policy || e.data.version > policy.version) policy = e.data; break;
      case 'GroupResampled': {
        const rs = Object.values(e.data.rewards);
        const at = solved.get(e.data.promptId);
        if (e.data.groupDropped === 'all_equal' && rs.length && rs.every((r) => r > 0) && (at === undefined || e.data.step < at)) solved.set(e.data.promptId, e.data.step);
        break;
      }
      default: break;
    }
  }
  // A run with a PolicyDelivery publishes PolicyUpdated before StepOptimized: an update newer than every
  // StepOptimized was cut off mid-delivery; the resumed driver starts from the one before and redoes it.
  const confirmed = Math.max(0, ...[...optimized.values()].map((o) => o.newPolicyVersion));
  if (policy && policy.version > confirmed) {
    policy = null;
    for (const e of events) if (e.type === 'PolicyUpdated' && e.data.version <= confirmed && (!policy || e.data.version > policy.version)) policy = e.data;
  }
  let nextStep = 0;
  while (completed.has(nextStep)) nextStep++;
  const inFlight = new Map([...startedSteps].filter(([s]) => s >= nextStep).sort(([a], [b]) => a - b));
  return { started, finished, nextStep, policy, optimizedNext: optimized.get(nextStep) ?? null, inFlight, solvedPromptIds: solved };
}
