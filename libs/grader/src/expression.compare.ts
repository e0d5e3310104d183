import { GraderError } from './errors';
import type { ComplexValue } from './complex.evaluator';
import { evaluate, freeVariables, type MathJson, type Value } from './expression.evaluator';
import { surdsEqual } from './surd.evaluator';

/** Outcome of an equality check; `unknown` when the fast path cannot decide (fail closed or offload). */
export type Equality = 'equal' | 'different' | 'unknown';

/** Options of {@link compareValues}. */
export interface CompareOptions {
  /** The prediction contains a non-integer decimal literal (an approximation, rule 6). */
  predHasDecimal?: boolean;
  /** The gold contains a non-integer decimal literal (a rounded value of an irrational answer). */
  goldHasDecimal?: boolean;
}

/** Relative agreement of two exact closed forms evaluated in doubles. */
const CLOSED_FORM_RTOL = 1e-10;
/** A decimal for an irrational gold must have at least 6 correct decimals (docs/design/grading.md rule 6). */
const DECIMAL_TOL = 1e-6;
/** Relative agreement at each sample point for expressions with variables. */
const SAMPLE_RTOL = 1e-8;
const SAMPLE_POINTS = 7;

function close(a: number, b: number, rtol: number): boolean {
  return Math.abs(a - b) <= rtol * Math.max(Math.abs(a), Math.abs(b));
}

/**
 * Compares two constant values (docs/design/grading.md rules 3 and 6): rationals exactly; an approximate decimal
 * against an irrational gold to 6 decimals; exact closed forms (radicals, pi, e) to 1e-10 relative.
 * Values at or past the edge of double range (0, subnormal, infinite) that are not exact are
 * `unknown`, so tiny values never collapse to zero.
 */
export function compareValues(pred: Value, gold: Value, opts: CompareOptions = {}): Equality {
  if (pred.exact && gold.exact) return pred.exact.equals(gold.exact) ? 'equal' : 'different';
  const p = pred.approx;
  const g = gold.approx;
  if (Number.isNaN(p) || Number.isNaN(g)) return 'unknown';
  if (!Number.isFinite(p) || !Number.isFinite(g)) {
    if (!Number.isFinite(p) && !Number.isFinite(g)) return p === g ? 'equal' : 'different';
    return pred.exact || gold.exact ? 'different' : 'unknown';
  }
  const tiny = (v: Value) => !v.exact && Math.abs(v.approx) < 1e-290;
  if (tiny(pred) || tiny(gold)) return 'unknown';
  if (gold.exact?.isInteger() && opts.predHasDecimal) return 'different';
  // Against an exact 0 only the exact backend can say "equal" (sin(pi) evaluates to 1e-16).
  if (pred.exact?.sign() === 0 || gold.exact?.sign() === 0) return Math.abs(p - g) < 1e-9 ? 'unknown' : 'different';
  // An integer gold never passes by tolerance (rule 3): a closed form within 1e-10 of it (e^{pi sqrt 163})
  // is left to the exact backend.
  if (gold.exact?.isInteger() && !pred.exact) return close(p, g, CLOSED_FORM_RTOL) ? 'unknown' : 'different';
  if ((opts.predHasDecimal && !gold.exact) || (opts.goldHasDecimal && gold.exact && !pred.exact)) {
    return Math.abs(p - g) < DECIMAL_TOL * Math.max(1, Math.abs(g)) ? 'equal' : 'different';
  }
  return close(p, g, CLOSED_FORM_RTOL) ? 'equal' : 'different';
}

/** Small deterministic PRNG (mulberry32) so a grade is reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sample environments: each variable gets a distinct value in [0.35, 2.6) (positive, away from 0 and 1). */
export function sampleEnvs(vars: Iterable<string>, n = SAMPLE_POINTS): Map<string, number>[] {
  const rnd = prng(0x5eed);
  const names = [...vars].sort();
  return Array.from({ length: n }, () => new Map(names.map((v) => [v, 0.35 + rnd() * 2.25])));
}

function safeEval(j: MathJson, env: Map<string, number>): number {
  try {
    return evaluate(j, env).approx;
  } catch (e) {
    if (e instanceof GraderError && e.code === 'division_by_zero') return NaN;
    throw e;
  }
}

/**
 * Equality of two expressions (docs/design/grading.md rule 6). Constant expressions: {@link compareValues}.
 * With free variables: identity testing at fixed random points (Schwartz-Zippel style); `unknown`
 * when fewer than 3 points are defined on both sides. Throws `GraderError` for refused or
 * unsupported input.
 */
export function compareExpressions(pred: MathJson, gold: MathJson, opts: CompareOptions = {}): Equality {
  const vars = freeVariables(pred);
  freeVariables(gold, vars);
  if (vars.size === 0) {
    const r = compareValues(evaluate(pred), evaluate(gold), opts);
    if (r !== 'unknown') return r;
    // Doubles cannot decide (a closed form within 1e-10 of an integer gold): exact radical arithmetic can.
    const exact = surdsEqual(pred, gold);
    return exact === null ? 'unknown' : exact ? 'equal' : 'different';
  }
  let defined = 0;
  for (const env of sampleEnvs(vars)) {
    const p = safeEval(pred, env);
    const g = safeEval(gold, env);
    if (!Number.isFinite(p) || !Number.isFinite(g)) {
      if (Number.isFinite(p) !== Number.isFinite(g)) return 'different';
      continue;
    }
    defined++;
    if (Math.abs(p - g) > SAMPLE_RTOL * Math.max(1, Math.abs(p), Math.abs(g))) return 'different';
  }
  return defined >= 3 ? 'equal' : 'unknown';
}

/**
 * Equality of two equations `lp = rp` and `lg = rg` up to a non-zero constant factor (docs/design/grading.md rule 8):
 * `(lp - rp) / (lg - rg)` is the same non-zero constant at every sample point.
 */
export function compareEquations(pred: [MathJson, MathJson], gold: [MathJson, MathJson]): Equality {
  const vars = freeVariables(pred[0]);
  [pred[1], gold[0], gold[1]].forEach((x) => freeVariables(x, vars));
  let ratio: number | null = null;
  let defined = 0;
  for (const env of sampleEnvs(vars)) {
    const dp = safeEval(pred[0], env) - safeEval(pred[1], env);
    const dg = safeEval(gold[0], env) - safeEval(gold[1], env);
    if (!Number.isFinite(dp) || !Number.isFinite(dg)) continue;
    if (Math.abs(dg) < 1e-12 || Math.abs(dp) < 1e-12) {
      if ((Math.abs(dg) < 1e-12) !== (Math.abs(dp) < 1e-12)) return 'different';
      continue;
    }
    const r = dp / dg;
    if (ratio === null) ratio = r;
    else if (!close(r, ratio, SAMPLE_RTOL)) return 'different';
    defined++;
  }
  if (vars.size === 0) return 'unknown';
  return defined >= 3 ? 'equal' : 'unknown';
}

/**
 * Equality of two complex constants (rule `complex`): exact Gaussian rationals exactly; otherwise
 * |p - g| within 1e-10 of their size (1e-6 absolute when the prediction is a decimal approximation of an
 * inexact gold). A real integer gold is never matched by tolerance (rule 3): `unknown` instead.
 */
export function compareComplexValues(pred: ComplexValue, gold: ComplexValue, opts: CompareOptions = {}): Equality {
  const exact = (v: ComplexValue) => v.re.exact !== null && v.im.exact !== null;
  if (exact(pred) && exact(gold)) return pred.re.exact!.equals(gold.re.exact!) && pred.im.exact!.equals(gold.im.exact!) ? 'equal' : 'different';
  const diff = Math.hypot(pred.re.approx - gold.re.approx, pred.im.approx - gold.im.approx);
  const size = Math.max(Math.hypot(pred.re.approx, pred.im.approx), Math.hypot(gold.re.approx, gold.im.approx));
  if (!Number.isFinite(diff) || !Number.isFinite(size)) return 'unknown';
  const tol = opts.predHasDecimal && !exact(gold) ? DECIMAL_TOL * Math.max(1, size) : CLOSED_FORM_RTOL * size;
  if (diff > tol) return size === 0 || diff > 1e-9 ? 'different' : 'unknown';
  const realIntegerGold = gold.im.exact?.sign() === 0 && gold.re.exact?.isInteger();
  return realIntegerGold || size < 1e-290 ? 'unknown' : 'equal';
}
