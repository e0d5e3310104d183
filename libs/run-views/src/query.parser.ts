import { RunViewQueryError } from './errors';
import type { RolloutOutcome, RolloutQuery } from './run-views.port';

/** A non-negative integer query value in `[min, max]`, or `dflt` when absent. @throws RunViewQueryError naming `field`. */
export function intParam(field: string, raw: string | undefined, dflt: number | undefined, min: number, max: number): number | undefined {
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new RunViewQueryError(field, `must be an integer in ${min}..${max}, got "${raw}"`);
  return n;
}

const OUTCOMES: readonly RolloutOutcome[] = ['all', 'correct', 'wrong', 'kept', 'dropped', 'tool-error', 'truncated'];

/** `?step=&outcome=&offset=&limit=` of the rollouts list (limit 1..500, default 100). @throws RunViewQueryError. */
export function rolloutQuery(q: { step?: string; outcome?: string; offset?: string; limit?: string }): RolloutQuery {
  const outcome = (q.outcome || 'all') as RolloutOutcome;
  if (!OUTCOMES.includes(outcome)) throw new RunViewQueryError('outcome', `must be one of ${OUTCOMES.join(', ')}, got "${q.outcome}"`);
  return {
    step: intParam('step', q.step, undefined, 0, 1e9),
    outcome,
    offset: intParam('offset', q.offset, 0, 0, 1e9)!,
    limit: intParam('limit', q.limit, 100, 1, 500)!,
  };
}
