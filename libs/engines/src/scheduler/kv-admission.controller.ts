/**
 * Feedback for the `kv-adaptive` policy (docs/design/architecture.md, scheduler): how far an engine's KV
 * reservations may exceed its capacity. Reservation alone (factor 1, rStar2's KV budget) never overflows
 * but leaves KV idle, since a rollout holds its whole budget while it has generated only part of it; an
 * engine that retracts on overflow (SGLang) can take more, as long as it does not retract. The factor is a
 * gradient-gated AIMD on the engine's observed KV usage and retraction counter, after prime-rl's adaptive
 * concurrency controller (PrimeIntellect-ai/prime-rl PRs #2908, #3556): admission-time budgeting keeps it
 * safe, feedback only trims the budget's error.
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
  /** Completed rollouts needed before the factor may grow at all (below it: plain reservation). */
  minSamples: number;
  /** Quantile of the completed rollouts' used share of their reservation that the ceiling is taken from. */
  quantile: number;
}

export const DEFAULT_ADMISSION: AdmissionSettings = { targetShare: 0.8, highWaterShare: 0.95, settleShare: 0.1, growth: 0.1, backoff: 0.5, trim: 0.9, maxFactor: 4, minSamples: 8, quantile: 0.9 };

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
 * quantile of `usedShares` (each = the KV tokens a finished rollout held on average / the tokens it
 * reserved), clamped to [1, maxFactor]; 1 until `s.minSamples` rollouts finished. Rollouts whose tokens
 * fill their reservation keep plain reservation; rollouts that mostly end early, or whose KV grows over
 * a long life, let reservations exceed capacity by as much, since rollouts out of phase do not peak together.
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
 * up to the ceiling, else it holds. The factor stays in [1, maxFactor]: at 1 it is plain reservation,
 * which never overflows.
 */
export function nextAdmission(
  state: AdmissionState,
  sample: { usedShare: number; retractions: number },
  ctx: { saturated: boolean; turnedOver: boolean; ceiling: number },
  s: AdmissionSettings = DEFAULT_ADMISSION,
): { state: AdmissionState; move: AdmissionMove } {
  const seen = { retractions: sample.retractions, usedShare: sample.usedShare };
  if (state.retractions === null || state.usedShare === null || sample.retractions < state.retractions) return { state: { factor: state.factor, ...seen }, move: 'baseline' };
  const clamp = (f: number) => Math.min(s.maxFactor, Math.max(1, f));
  if (sample.retractions > state.retractions) return { state: { factor: clamp(state.factor * s.backoff), ...seen }, move: 'backoff' };
  if (sample.usedShare >= s.highWaterShare) return { state: { factor: clamp(state.factor * s.trim), ...seen }, move: 'trim' };
  const settled = sample.usedShare - state.usedShare <= s.settleShare;
  if (ctx.saturated && ctx.turnedOver && settled && sample.usedShare < s.targetShare && state.factor < ctx.ceiling) {
    const grown = Math.min(ctx.ceiling, state.factor + s.growth * (1 - sample.usedShare / s.targetShare));
    return { state: { factor: clamp(grown), ...seen }, move: 'grow' };
  }
  return { state: { factor: state.factor, ...seen }, move: 'hold' };
}
