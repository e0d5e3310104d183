import type { TrainProgress } from './run.result';

const f = (v: number | null | undefined, d = 3) => (v === null || v === undefined ? '-' : v.toFixed(d));

/** `2m05s`, `48s`. */
export function fmtDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * What each field of the per-step line means; printed once before the first step line. Steps are
 * 0-based everywhere: this line, metrics.csv, `rstar replay show`, the plots and the dashboard.
 */
export const STEP_LINE_LEGEND = [
  'per-step line (steps are 0-based, as in metrics.csv, `rstar replay show`, the plots and the dashboard):',
  '  step N/LAST [stage]   this step and the last step of the run',
  '  reward   mean reward of the step\'s rollouts          pass     share of rollouts with reward 1',
  '  dropped  share of groups GRPO-RoC dropped (all rewards equal, or timed out)',
  '  toolErr+ erroneous tool calls / tool calls in positive (reward 1) rollouts: what RoC drives down',
  '  toolErr  the same over all rollouts                  len      mean response tokens (model + tool output)',
  '  loss     policy loss of the update                   clip     share of tokens clipped by PPO',
  '  vN       policy version after the step               Ns       wall time of the step;  eta: time left for the RL steps',
].join('\n');

/** The one-line summary of an RL step (0-based step numbers); `etaS`: seconds left for the remaining RL steps. */
export function stepSummaryLine(p: Extract<TrainProgress, { phase: 'rl' }>, etaS?: number | null): string {
  const m = p.metrics;
  return (
    `step ${p.step}/${p.steps - 1} [${p.stage}] reward ${f(m.rewardMean)} pass ${f(m.passRate)} dropped ${f(m.droppedGroupShare, 2)} ` +
    `toolErr+ ${f(m.toolErrorRatioPositive)} toolErr ${f(m.toolErrorRatioAll)} len ${f(m.responseLengthMean, 1)} loss ${f(m.loss, 4)} ` +
    `clip ${f(m.clipFraction)} v${m.policyVersion ?? '-'} ${f((m.timeStepMs ?? 0) / 1000, 1)}s` +
    (etaS !== undefined && etaS !== null ? ` eta ${fmtDuration(etaS)}` : '')
  );
}
