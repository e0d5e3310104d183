import type { TrainProgress } from './training.run';

const f = (v: number | null | undefined, d = 3) => (v === null || v === undefined ? '-' : v.toFixed(d));

/** The one-line summary of an RL step. */
export function stepSummaryLine(p: Extract<TrainProgress, { phase: 'rl' }>): string {
  const m = p.metrics;
  return (
    `step ${p.step + 1}/${p.steps} [${p.stage}] reward ${f(m.rewardMean)} pass ${f(m.passRate)} dropped ${f(m.droppedGroupShare, 2)} ` +
    `toolErr+ ${f(m.toolErrorRatioPositive)} toolErr ${f(m.toolErrorRatioAll)} len ${f(m.responseLengthMean, 1)} loss ${f(m.loss, 4)} ` +
    `clip ${f(m.clipFraction)} v${m.policyVersion ?? '-'} ${f((m.timeStepMs ?? 0) / 1000, 1)}s`
  );
}
