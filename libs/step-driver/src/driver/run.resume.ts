import type { EventData, RstarEvent } from '@rstar/contracts';

/** Where a run stands, rebuilt from its events. */
export interface ResumePoint {
  started: boolean;
  /** RunCompleted or RunFailed is on the log. */
  finished: boolean;
  /** The next step to run (= number of steps with a StepCompleted, steps being sequential). */
  nextStep: number;
  /** Latest PolicyUpdated, or null before the first update: the trainer must load this checkpoint. */
  policy: EventData<'PolicyUpdated'> | null;
  /** StepOptimized of the next step when it was written before a crash: do not train that step again. */
  optimizedNext: EventData<'StepOptimized'> | null;
  /** Prompt ids every sampled rollout solved (all-equal groups with reward 1), for `filterSolved` stages. */
  solvedPromptIds: Set<string>;
}

/**
 * Rebuild a run's {@link ResumePoint} from its events (any order; duplicates harmless). The driver
 * resumes at `nextStep`, skipping training when `optimizedNext` shows the update already happened.
 */
export function resumePoint(events: readonly RstarEvent[]): ResumePoint {
  const completed = new Set<number>();
  const optimized = new Map<number, EventData<'StepOptimized'>>();
  let policy: EventData<'PolicyUpdated'> | null = null;
  let started = false;
  let finished = false;
  const solved = new Set<string>();
  for (const e of events) {
    switch (e.type) {
      case 'RunStarted': started = true; break;
      case 'RunCompleted': case 'RunFailed': finished = true; break;
      case 'StepCompleted': completed.add(e.data.step); break;
      case 'StepOptimized': optimized.set(e.data.step, e.data); break;
      case 'PolicyUpdated': if (!policy || e.data.version > policy.version) policy = e.data; break;
      case 'GroupResampled': {
        const rs = Object.values(e.data.rewards);
        if (e.data.groupDropped === 'all_equal' && rs.length && rs.every((r) => r > 0)) solved.add(e.data.promptId);
        break;
      }
      default: break;
    }
  }
  let nextStep = 0;
  while (completed.has(nextStep)) nextStep++;
  return { started, finished, nextStep, policy, optimizedNext: optimized.get(nextStep) ?? null, solvedPromptIds: solved };
}
