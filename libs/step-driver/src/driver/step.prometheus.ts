import { gauge, histogram } from '@rstar/telemetry';

/**
 * The RL metrics of each completed step as Prometheus series (labels `run`, `stage`), set by the step
 * driver from `StepCompleted`'s metrics (see `stepMetrics`): what a Grafana dashboard plots per run.
 * Gauges hold the latest step's value; the phase timings are also observed in a histogram so rates and
 * quantiles over steps are available. A metric whose value is null for a step (no denominator, or no
 * training) keeps its previous value.
 */
const GAUGES: ReadonlyArray<[metric: string, key: string, help: string]> = [
  ['rstar_rl_step', 'step', 'Last completed step'],
  ['rstar_rl_policy_version', 'policyVersion', 'Policy version after the last completed step'],
  ['rstar_rl_reward_mean', 'rewardMean', 'Mean reward over every sampled rollout of the step'],
  ['rstar_rl_pass_rate', 'passRate', 'Share of the step\'s sampled rollouts with reward 1'],
  ['rstar_rl_reward_mean_kept', 'rewardMeanKept', 'Mean reward over the rollouts RoC kept'],
  ['rstar_rl_response_length_mean', 'responseLengthMean', 'Mean response length (tokens) of the step\'s rollouts'],
  ['rstar_rl_turns_mean', 'turnsMean', 'Mean turns per rollout'],
  ['rstar_rl_truncated_share', 'truncatedShare', 'Share of rollouts that ran out of budget'],
  ['rstar_rl_dropped_group_share', 'droppedGroupShare', 'Share of the step\'s groups dropped (all rewards equal, or timed out)'],
  ['rstar_rl_clip_fraction', 'clipFraction', 'PPO clip fraction of the update'],
  ['rstar_rl_kl', 'approxKl', 'Approximate KL between the old and new policy'],
  ['rstar_rl_grad_norm', 'gradNorm', 'Global gradient norm before clipping'],
  ['rstar_rl_loss', 'loss', 'Token-mean clipped loss'],
  ['rstar_rl_entropy', 'entropy', 'Mean token entropy (nats)'],
];

/** Record one `StepCompleted`'s metrics (the record's keys as in `stepMetrics`). */
export function recordStepMetrics(runId: string, stage: string, step: number, m: Record<string, number | null>): void {
  const labels = { run: runId, stage };
  const values: Record<string, number | null> = { ...m, step };
  for (const [name, key, help] of GAUGES) {
    const v = values[key];
    if (typeof v === 'number' && Number.isFinite(v)) gauge(name, help, ['run', 'stage']).set(labels, v);
  }
  const errors = gauge('rstar_rl_tool_error_ratio', 'Erroneous tool calls / all tool calls, in positive (reward 1) or all rollouts of the step', ['run', 'stage', 'rollouts']);
  if (m.toolErrorRatioPositive != null) errors.set({ ...labels, rollouts: 'positive' }, m.toolErrorRatioPositive);
  if (m.toolErrorRatioAll != null) errors.set({ ...labels, rollouts: 'all' }, m.toolErrorRatioAll);
  const groups = m.groups ?? 0;
  const dropped = gauge('rstar_rl_dropped_groups', 'Groups of the last step dropped before training, by reason', ['run', 'stage', 'reason']);
  dropped.set({ ...labels, reason: 'all_equal' }, Math.round((m.allEqualGroupShare ?? 0) * groups));
  dropped.set({ ...labels, reason: 'timeout' }, Math.round((m.timeoutGroupShare ?? 0) * groups));
  const phases = histogram(
    'rstar_rl_step_phase_seconds',
    'Time of each phase of a step (rollouts, train, checkpoint, sync, whole step)',
    ['run', 'stage', 'phase'],
    [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
  );
  const last = gauge('rstar_rl_step_phase_last_seconds', 'Time of each phase of the last step', ['run', 'stage', 'phase']);
  for (const [k, v] of Object.entries(m)) {
    const p = /^time(.+)Ms$/.exec(k);
    if (!p || typeof v !== 'number') continue;
    const phase = p[1][0].toLowerCase() + p[1].slice(1);
    phases.observe({ ...labels, phase }, v / 1000);
    last.set({ ...labels, phase }, v / 1000);
  }
}
