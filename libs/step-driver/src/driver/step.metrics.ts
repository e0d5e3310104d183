import type { EventData } from '@rstar/contracts';
import type { TrainStepMetrics } from './ports';

type Resampled = EventData<'GroupResampled'>;
type Completed = EventData<'RolloutCompleted'>;

const mean = (xs: number[]): number | null => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
function errorRatio(rs: Completed[]): number | null {
  const calls = rs.reduce((s, r) => s + r.toolCalls, 0);
  return calls ? rs.reduce((s, r) => s + r.toolErrors, 0) / calls : null;
}

/**
 * The metrics of `StepCompleted` from the step's resampled groups and completed rollouts: reward mean
 * and pass rate over every sampled rollout (binary reward: pass rate = share with reward 1) and over
 * the kept ones, share of dropped groups (and why), tool-error ratio (erroneous / all calls; the
 * quantity RoC drives down, rStar2-Agent Fig. 4) in positive and in all rollouts, response length,
 * plus the trainer's figures and per-phase timings (ms). A ratio with no denominator is null.
 */
export function stepMetrics(o: {
  groups: readonly Resampled[];
  rollouts: ReadonlyMap<string, Completed>;
  train: TrainStepMetrics | null;
  timings: Record<string, number>;
  policyVersion: number;
}): Record<string, number | null> {
  const rewardOf = new Map<string, number>();
  const kept = new Set<string>();
  for (const g of o.groups) {
    for (const [id, r] of Object.entries(g.rewards)) rewardOf.set(id, r);
    for (const id of g.kept) kept.add(id);
  }
  const sampled = [...rewardOf.keys()].map((id) => o.rollouts.get(id)).filter((r): r is Completed => !!r);
  const positive = sampled.filter((r) => rewardOf.get(r.rolloutId)! > 0);
  const keptRollouts = sampled.filter((r) => kept.has(r.rolloutId));
  const rewards = [...rewardOf.values()];
  const n = o.groups.length;
  const share = (f: (g: Resampled) => boolean) => (n ? o.groups.filter(f).length / n : null);
  return {
    policyVersion: o.policyVersion,
    groups: n,
    rollouts: rewards.length,
    keptRollouts: kept.size,
    rewardMean: mean(rewards),
    passRate: rewards.length ? rewards.filter((r) => r > 0).length / rewards.length : null,
    rewardMeanKept: mean([...kept].map((id) => rewardOf.get(id) ?? 0)),
    droppedGroupShare: share((g) => g.groupDropped !== null),
    allEqualGroupShare: share((g) => g.groupDropped === 'all_equal'),
    timeoutGroupShare: share((g) => g.groupDropped === 'timeout'),
    toolErrorRatioPositive: errorRatio(positive),
    toolErrorRatioAll: errorRatio(sampled),
    toolErrorRatioPositiveKept: errorRatio(keptRollouts.filter((r) => rewardOf.get(r.rolloutId)! > 0)),
    toolCallsMean: mean(sampled.map((r) => r.toolCalls)),
    responseLengthMean: mean(sampled.map((r) => r.responseTokenIds.length)),
    responseLengthKeptMean: mean(keptRollouts.map((r) => r.responseTokenIds.length)),
    turnsMean: mean(sampled.map((r) => r.turns)),
    truncatedShare: sampled.length ? sampled.filter((r) => r.truncated).length / sampled.length : null,
    loss: o.train?.loss ?? null,
    clipFraction: o.train?.clipFraction ?? null,
    clipRatio: o.train?.clipFraction ?? null,
    approxKl: o.train?.approxKl ?? null,
    entropy: o.train?.entropy ?? null,
    gradNorm: o.train?.gradNorm ?? null,
    ...workerMetrics(o.train),
    ...Object.fromEntries(Object.entries(o.timings).map(([k, v]) => [`time${k[0].toUpperCase()}${k.slice(1)}Ms`, v])),
  };
}

/**
 * The trainer worker's figures as step metrics (none for the builtin trainer, whose metrics stay as they
 * were): dual-clip fraction, updates per step, lr, and the engine/trainer logprob drift (mean and max
 * |diff|, mismatch KL, ratio range) and TIS weights when on.
 */
function workerMetrics(t: TrainStepMetrics | null): Record<string, number | null> {
  if (!t) return {};
  const out: Record<string, number | null> = {};
  if (t.dualClipFraction !== undefined) out.dualClipFraction = t.dualClipFraction;
  if (t.updates !== undefined) out.updates = t.updates;
  if (t.lr !== undefined) out.lr = t.lr;
  if (t.logprobDrift !== undefined) {
    const d = t.logprobDrift;
    out.logprobDiffMean = d?.meanAbs ?? null;
    out.logprobDiffMax = d?.maxAbs ?? null;
    out.mismatchKl = d?.mismatchKl ?? null;
    out.importanceRatioMin = d?.ratioMin ?? null;
    out.importanceRatioMax = d?.ratioMax ?? null;
  }
  if (t.tis !== undefined) {
    out.tisMeanWeight = t.tis?.meanWeight ?? null;
    out.tisCappedFraction = t.tis?.cappedFraction ?? null;
  }
  return out;
}
