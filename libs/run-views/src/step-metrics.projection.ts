import type { RstarEvent } from '@rstar/contracts';
import type { EvaluationPoint, StageSpan, StepMetricsRow } from './views';

/**
 * One metrics row per step from its `StepStarted`, `StepOptimized` and `StepCompleted` (pure; events in
 * any order, other types ignored), in step order. A step only started is `running`; `metrics` holds
 * StepCompleted's metrics, plus the trainer's figures (loss, clip fraction, KL, entropy, grad norm) from
 * StepOptimized where StepCompleted lacks them.
 */
export function stepMetricsRows(events: Iterable<RstarEvent>): StepMetricsRow[] {
  const rows = new Map<number, StepMetricsRow>();
  const row = (step: number): StepMetricsRow => {
    let r = rows.get(step);
    if (!r) rows.set(step, (r = { step, stage: null, status: 'running', policyVersion: null, prompts: null, metrics: {}, optimized: null, startedAt: null, completedAt: null }));
    return r;
  };
  for (const e of events) {
    switch (e.type) {
      case 'StepStarted': {
        const r = row(e.data.step);
        r.stage ??= e.data.stage;
        r.policyVersion = e.data.policyVersion;
        r.prompts = e.data.promptIds.length;
        r.startedAt = e.meta.recordedAt;
        break;
      }
      case 'StepOptimized': {
        const r = row(e.data.step);
        const d = e.data;
        r.optimized = {
          loss: d.loss, clipFraction: d.clipFraction, approxKl: d.approxKl, entropy: d.entropy, gradNorm: d.gradNorm, advantageMean: d.advantageMean,
          advantageStd: d.advantageStd, tokens: d.tokens, rollouts: d.rollouts, batchHash: d.batchHash, newPolicyVersion: d.newPolicyVersion,
        };
        if (r.status === 'running') r.status = 'optimized';
        break;
      }
      case 'StepCompleted': {
        const r = row(e.data.step);
        r.stage = e.data.stage;
        r.metrics = { ...e.data.metrics };
        r.status = 'completed';
        r.completedAt = e.meta.recordedAt;
        break;
      }
      default:
        break;
    }
  }
  // The trainer's figures are in StepOptimized too: a history whose StepCompleted lacks them still charts them.
  for (const r of rows.values()) {
    if (!r.optimized) continue;
    for (const k of ['loss', 'clipFraction', 'approxKl', 'entropy', 'gradNorm'] as const) {
      if ((r.metrics[k] === undefined || r.metrics[k] === null) && r.optimized[k] !== null) r.metrics[k] = r.optimized[k];
    }
  }
  return [...rows.values()].sort((a, b) => a.step - b.step);
}

/** Consecutive steps of one stage as spans (the charts' stage markers), from the rows (pure). */
export function stageSpans(rows: readonly StepMetricsRow[]): StageSpan[] {
  const out: StageSpan[] = [];
  for (const r of rows) {
    const name = r.stage ?? '?';
    const last = out.at(-1);
    if (last && last.name === name && last.lastStep === r.step - 1) last.lastStep = r.step;
    else out.push({ name, firstStep: r.step, lastStep: r.step });
  }
  return out;
}

/** Held-out evaluations from `EvaluationCompleted`, in (afterStep, name) order (pure). */
export function evaluationPoints(events: Iterable<RstarEvent>): EvaluationPoint[] {
  const out: EvaluationPoint[] = [];
  for (const e of events) {
    if (e.type !== 'EvaluationCompleted') continue;
    out.push({ ...e.data, at: e.meta.recordedAt });
  }
  return out.sort((a, b) => a.afterStep - b.afterStep || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
