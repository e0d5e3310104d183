import type { RstarEvent } from '@rstar/contracts';
import type { RunHeadRow } from './archive.queries';
import type { RunListItem } from './views';

/** The config's name: `name` (presets set it to their own name), else a `preset` field (synthetic runs). */
export function presetOf(config: Record<string, unknown> | null | undefined): string | null {
  if (!config) return null;
  if (typeof config.name === 'string') return config.name;
  if (typeof config.preset === 'string') return config.preset;
  return null;
}

/** Steps the config plans: the sum of `stages[].steps`, or a top-level `steps` (synthetic runs). */
export function plannedSteps(config: Record<string, unknown> | null | undefined): number | null {
  if (!config) return null;
  const stages = config.stages;
  if (Array.isArray(stages) && stages.every((s) => typeof (s as { steps?: unknown })?.steps === 'number')) {
    return stages.reduce((a: number, s) => a + (s as { steps: number }).steps, 0);
  }
  return typeof config.steps === 'number' ? config.steps : null;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The runs-list row of a run from its head facts (pure). */
export function runListItem(h: RunHeadRow): RunListItem {
  const s = h.started?.data;
  const fin = h.finished;
  const last = h.lastCompleted?.data;
  return {
    runId: h.runId,
    status: fin?.type === 'RunCompleted' ? 'completed' : fin?.type === 'RunFailed' ? 'failed' : 'running',
    preset: presetOf(s?.config),
    mode: s?.mode ?? null,
    seed: s?.seed ?? null,
    codeVersion: s?.codeVersion ?? null,
    stage: h.lastStarted?.data.stage ?? last?.stage ?? null,
    step: h.lastStarted?.data.step ?? last?.step ?? null,
    totalSteps: s?.rerunOf ? 1 : plannedSteps(s?.config),
    stepsCompleted: h.stepsCompleted,
    lastReward: num(last?.metrics.rewardMean),
    lastPassRate: num(last?.metrics.passRate),
    startedAt: h.started?.meta.recordedAt ?? null,
    finishedAt: fin?.meta.recordedAt ?? null,
    error: fin?.type === 'RunFailed' ? (fin as RstarEvent<'RunFailed'>).data.error : null,
    rerunOf: s?.rerunOf ?? null,
  };
}
