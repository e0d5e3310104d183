import type { RunIndex } from './run.index';

/** The run at a glance (`rstar replay show RUN`). */
export interface RunSummaryView {
  runId: string;
  status: 'running' | 'completed' | 'failed';
  mode: 'standalone' | 'distributed' | null;
  seed: number | null;
  codeVersion: string | null;
  /** The run config's preset name when it has one. */
  preset: string | null;
  rerunOf: { runId: string; step: number } | null;
  resumedFrom: string | null;
  /** Steps with a StepStarted / with a StepCompleted. */
  stepsStarted: number;
  stepsCompleted: number;
  rollouts: number;
  rolloutsCompleted: number;
  toolCalls: number;
  /** Mean reward over every graded rollout, or null before the first reward. */
  rewardMean: number | null;
  /** Latest policy version (0 before the first update). */
  policyVersion: number;
  error: string | null;
  events: number;
  eventsByType: Record<string, number>;
}

/** Project a run's summary from its index (pure). */
export function runSummary(ix: RunIndex): RunSummaryView {
  let rewardSum = 0;
  let rewards = 0;
  let completed = 0;
  let calls = 0;
  for (const r of ix.rollouts.values()) {
    if (r.completed) completed++;
    if (r.reward) {
      rewardSum += r.reward.reward;
      rewards++;
    }
    calls += r.calls.length;
  }
  const cfg = ix.started?.config as { preset?: unknown; name?: unknown } | undefined;
  const preset = typeof cfg?.preset === 'string' ? cfg.preset : typeof cfg?.name === 'string' ? cfg.name : null;
  return {
    runId: ix.runId,
    status: ix.finished?.type === 'RunCompleted' ? 'completed' : ix.finished?.type === 'RunFailed' ? 'failed' : 'running',
    mode: ix.started?.mode ?? null,
    seed: ix.started?.seed ?? null,
    codeVersion: ix.started?.codeVersion ?? null,
    preset,
    rerunOf: ix.started?.rerunOf ?? null,
    resumedFrom: ix.started?.resumedFrom ?? null,
    stepsStarted: ix.steps.filter((s) => s.started).length,
    stepsCompleted: ix.steps.filter((s) => s.completed).length,
    rollouts: ix.rollouts.size,
    rolloutsCompleted: completed,
    toolCalls: calls,
    rewardMean: rewards ? rewardSum / rewards : null,
    policyVersion: ix.policyUpdates.at(-1)?.version ?? 0,
    error: ix.finished?.type === 'RunFailed' ? (ix.finished.data as { error: string }).error : null,
    events: ix.events,
    eventsByType: { ...ix.counts },
  };
}
