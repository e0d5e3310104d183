/**
 * Feedback for the `kv-adaptive` policy (docs/design/protocol.md §7): the factor by which an engine's
 * projected KV peak ({@link projectedPeak} in kv-projection.ts) may exceed its capacity. At 1 the
 * projection, which has every rollout run to its budget, admits nothing that would make the engine
 * retract; above 1 it overcommits by as much as finished rollouts ended short of their budget; below 1
 * (after a retraction) it corrects a projection that was off. A gradient-gated AIMD on the engine's
 * observed KV usage and retraction counter, after prime-rl's adaptive concurrency controller
 * (PrimeIntellect-ai/prime-rl PRs #2908, #3556): admission-time projection keeps it safe, feedback only
 * trims the projection's error.
 */

/** Settings of the controller; shares are of the engine's KV capacity. */
export interface AdmissionSettings {
  /** Grow only while the observed KV usage share is below this (0.8, prime-rl's default target). */
  targetShare: number;
  /** Trim when the observed usage share reaches this (0.95: the next decode steps would overflow). */
  highWaterShare: number;
  /** Hold when usage rose by more than this share since the last sample (KV of admitted rollouts still materialising). */
  settleShare: number;
  /** Largest additive growth of the factor per turnover, tapered linearly to 0 at the target. */
  growth: number;
  /** Multiplier on a new retraction (multiplicative decrease). */
  backoff: number;
  /** Multiplier at the high-water mark. */
  trim: number;
  /** Ceiling of the factor. */
  maxFactor: number;
  /** Floor of the factor: retractions at factor 1 mean the projection was off; back off below it. */
  minFactor: number;
  /** Completed rollouts needed before the factor may grow at all (below it: plain reservation). */
  minSamples: number;
  /** Quantile of the completed rollouts' used share of their reservation that the ceiling is taken from. */
  quantile: number;
}

export const DEFAULT_ADMISSION: AdmissionSettings = { targetShare: 0.8, highWaterShare: 0.95, settleShare: 0.1, growth: 0.1, backoff: 0.5, trim: 0.9, maxFactor: 4, minFactor: 0.5, minSamples: 8, quantile: 0.9 };

/** Per-engine state: the admission factor (reservations may reach `factor x capacity`) and the last sample seen. */
export interface AdmissionState {
  factor: number;
  /** Retraction counter at the last sample (null before the first). */
  retractions: number | null;
  /** Usage share at the last sample (null before the first). */
  usedShare: number | null;
}

/** What changed at one sample. */
export type AdmissionMove = 'baseline' | 'grow' | 'hold' | 'trim' | 'backoff';

/**
 * The highest factor the KV the rollouts really used allows (pure): `1 / q`, with `q` the `s.quantile`
 * quantile of `usedShares` (each = the most KV tokens a finished rollout held / the tokens it reserved,
 * prompt + budget), clamped to [1, maxFactor]; 1 until `s.minSamples` rollouts finished. The projection
 * has every rollout run to its budget: rollouts that do keep the factor at 1; rollouts that mostly end
 * early let the projected peak exceed the capacity by as much.
 */
export function admissionCeiling(usedShares: readonly number[], s: AdmissionSettings = DEFAULT_ADMISSION): number {
  if (usedShares.length < s.minSamples) return 1;
  const sorted = [...usedShares].sort((a, b) => a - b);
  const q = sorted[Math.min(sorted.length - 1, Math.floor(s.quantile * sorted.length))];
  return q > 0 ? Math.min(s.maxFactor, Math.max(1, 1 / q)) : s.maxFactor;
}

export const INITIAL_ADMISSION: AdmissionState = { factor: 1, retractions: null, usedShare: null };

/**
 * One control step (pure). `sample.usedShare` = KV tokens in use / capacity; `sample.retractions` = the
 * engine's monotonic retraction counter (a lower value than before = the engine restarted: re-baseline).
 * `ctx.saturated` = rollouts are waiting for budget (growth helps nobody otherwise); `ctx.turnedOver` = a
 * rollout left this engine since the factor last grew; `ctx.ceiling` = {@link admissionCeiling}. KV usage lags admission (a rollout's KV grows over
 * its whole life), so growth is paced by turnover as prime-rl paces it: at most one step per completed
 * rollout, never per sample.
 * Order: a new retraction backs off (x `backoff`), else reaching the high-water mark trims (x `trim`), else
 * below the target, saturated, turned over and settled it grows by `growth x (1 - usedShare / targetShare)`
 * up to the ceiling (below 1 by the full `growth` whatever the usage, up to 1), else it holds. The factor
 * stays in [minFactor, maxFactor]; the high-water trim never takes it below 1.
 */
export function nextAdmission(
  state: AdmissionState,
  sample: { usedShare: number; retractions: number },
  ctx: { saturated: boolean; turnedOver: boolean; ceiling: number },
  s: AdmissionSettings = DEFAULT_ADMISSION,
): { state: AdmissionState; move: AdmissionMove } {
  const seen = { retractions: sample.retractions, usedShare: sample.usedShare };
  if (state.retractions === null || state.usedShare === null || sample.retractions < state.retractions) return { state: { factor: state.factor, ...seen }, move: 'baseline' };
  const clamp = (f: number) => Math.min(s.maxFactor, Math.max(s.minFactor, f));
  if (sample.retractions > state.retractions) return { state: { factor: clamp(state.factor * s.backoff), ...seen }, move: 'backoff' };
  // The high-water mark takes back overcommit only: at factor 1 the projection already fills the engine to its capacity on purpose.
  if (sample.usedShare >= s.highWaterShare && state.factor > 1) return { state: { factor: Math.max(1, clamp(state.factor * s.trim)), ...seen }, move: 'trim' };
  const settled = sample.usedShare - state.usedShare <= s.settleShare;
  // Below 1 (after a retraction) it recovers whatever the usage, which the projection drives near capacity.
  const below = state.factor < 1;
  if (ctx.saturated && ctx.turnedOver && settled && (below || sample.usedShare < s.targetShare) && state.factor < Math.max(1, ctx.ceiling)) {
    const grown = Math.min(Math.max(1, ctx.ceiling), state.factor + s.growth * (below ? 1 : 1 - sample.usedShare / s.targetShare));
    return { state: { factor: clamp(grown), ...seen }, move: 'grow' };
  }
  return { state: { factor: state.factor, ...seen }, move: 'hold' };
}
