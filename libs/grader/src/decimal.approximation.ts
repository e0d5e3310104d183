import type { Value } from './expression.evaluator';
import { Rational } from './rational';

/** A decimal literal as written: its exact value, the digits after the point and its significant digits. */
export interface DecimalLiteral {
  value: Rational;
  decimals: number;
  significant: number;
}

const LITERAL = /^([+-]?)((?:\d{1,3}(?:,\d{3})+|\d+)?)(?:\.(\d+))?$/;

/** Reads a plain decimal number (`-0.0340`, `1,234.5`, `12`); null for anything else. */
export function decimalLiteral(latex: string): DecimalLiteral | null {
  const m = LITERAL.exec(latex.trim());
  if (!m || (m[2] === '' && m[3] === undefined)) return null;
  const intPart = m[2].replace(/,/g, '');
  const frac = m[3] ?? '';
  const value = Rational.parseDecimal(`${m[1]}${intPart || '0'}.${frac || '0'}`);
  if (!value) return null;
  // Leading zeros are not significant; trailing zeros after the point are.
  const digits = (intPart + frac).replace(/^0+/, '');
  const significant = frac ? digits.length : intPart.replace(/^0+/, '').replace(/0+$/, '').length || 1;
  return { value, decimals: frac.length, significant };
}

const pow10 = (k: number): bigint => 10n ** BigInt(k);

/** `r` rounded to `k` decimals, halves away from zero (how answers are rounded by hand). */
export function roundDecimals(r: Rational, k: number): Rational {
  const scale = pow10(k);
  const x = r.mul(new Rational(scale));
  const neg = x.sign() < 0;
  const a = neg ? x.neg() : x;
  const n = (2n * a.n + a.d) / (2n * a.d);
  return new Rational(neg ? -n : n, scale);
}

/** `r` cut (toward zero) to `k` decimals. */
export function truncateDecimals(r: Rational, k: number): Rational {
  const scale = pow10(k);
  const x = r.mul(new Rational(scale));
  return new Rational(x.n / x.d, scale);
}

/** An exact rational for a gold value: its exact form, or its double to 17 significant digits. */
function goldRational(v: Value): Rational | null {
  if (v.exact) return v.exact;
  if (!Number.isFinite(v.approx)) return null;
  return Rational.parseDecimal(v.approx.toPrecision(17));
}

/** `p` is `g` rounded or truncated at `p`'s own number of decimals. */
function agreesAtOwnPrecision(p: DecimalLiteral, g: Rational): boolean {
  return roundDecimals(g, p.decimals).equals(p.value) || truncateDecimals(g, p.decimals).equals(p.value);
}

/** Fewest significant digits the coarser side carries for rule `decimal_precision` (`0.3` is not `0.33333`). */
const MIN_SIGNIFICANT = 3;

/** A decimal that states a precision: at least one decimal, 3 significant digits, not a whole number (`22.0`). */
function statesPrecision(d: DecimalLiteral): boolean {
  return d.decimals > 0 && d.significant >= MIN_SIGNIFICANT && !d.value.isInteger();
}

/**
 * Rule `decimal_precision` (GRADING-RULES.md; no problem needed): a prediction and a gold both written
 * as decimals, to different numbers of decimals, agree when the finer one rounded to the coarser one's
 * decimals is the coarser one (`41.67` and `41.6667`, `2.718` and `2.71828183`, either way round). The
 * coarser must state a precision (at least one decimal and 3 significant digits, and neither side a whole
 * number): `3` is not `3.4`, `0.3` is not `0.33333`, `22.0` is not `22.04`. Rounding is half away from
 * zero (`0.4295` -> `0.430`); a value cut instead of rounded (`41.66`, `0.429`) does not agree.
 */
export function agreesAtCoarserPrecision(p: DecimalLiteral, g: DecimalLiteral): boolean {
  if (p.decimals === g.decimals || p.value.isInteger() || g.value.isInteger()) return false;
  const [coarse, fine] = p.decimals < g.decimals ? [p, g] : [g, p];
  return statesPrecision(coarse) && roundDecimals(fine.value, coarse.decimals).equals(coarse.value);
}

/** A decimal read as a percentage of itself (`41.67%` -> 0.4167): two more decimals, the same digits. */
export function hundredthOf(d: DecimalLiteral): DecimalLiteral {
  return { value: d.value.div(new Rational(100n)), decimals: d.decimals + 2, significant: d.significant };
}

/** What the problem says about precision (problem-aware mode); see `problem.hints.ts`. */
export interface PrecisionHints {
  /** Decimals asked for ("nearest hundredth" = 2), or significant figures asked for. */
  decimals?: number;
  significantFigures?: number;
  /** The problem asks for an approximate / floating-point answer without a precision. */
  approximate?: boolean;
}

export interface ApproximationVerdict {
  equal: boolean;
  rule: 'rounding' | 'approximate' | 'significant_digits' | 'decimal_precision';
}

/**
 * The decimal rules of GRADING-RULES.md for a prediction written as a decimal literal against a constant
 * gold that is not exactly equal to it. Returns null when no rule applies (the exact comparison stands).
 * An integer gold written without a point never passes here (rule 3).
 * - `rounding` (problem asks for k decimals or s significant figures): a gold written as a decimal with
 *   at most k decimals is the rounded answer, and the prediction must round to it; an exact gold must be
 *   matched by the prediction rounded (or cut) at its own precision, which is at least k.
 * - `approximate` (problem asks for a float, "approximately", without a precision): agreement with the
 *   gold at the coarser of the two precisions (rounded or cut), with at least 3 significant digits.
 * - `significant_digits` (no problem needed): 6 or more significant digits, correctly rounded or cut,
 *   against an exact non-integer rational gold that is not itself a decimal.
 * - `decimal_precision` (no problem needed, and no precision asked): a decimal gold, agreement at the
 *   coarser of the two precisions ({@link agreesAtCoarserPrecision}).
 */
export function approximateDecimal(
  pred: DecimalLiteral,
  gold: Value,
  goldLiteral: DecimalLiteral | null,
  hints: PrecisionHints | undefined,
): ApproximationVerdict | null {
  const g = goldRational(gold);
  if (!g) return null;
  // An integer gold (not written as a rounded decimal like `4.0`) passes only by exact equality (rule 3).
  if (gold.exact?.isInteger() && !(goldLiteral && goldLiteral.decimals > 0)) return null;
  let k = hints?.decimals;
  if (k === undefined && hints?.significantFigures !== undefined && g.sign() !== 0) {
    const magnitude = Math.floor(Math.log10(Math.abs(g.toNumber())));
    k = Math.max(0, hints.significantFigures - 1 - magnitude);
  }
  if (k !== undefined) {
    if (goldLiteral && goldLiteral.decimals <= k) {
      return { equal: pred.decimals >= goldLiteral.decimals && roundDecimals(pred.value, k).equals(roundDecimals(g, k)), rule: 'rounding' };
    }
    if (pred.decimals < k) return { equal: false, rule: 'rounding' };
    const equal = pred.decimals === k ? roundDecimals(g, k).equals(pred.value) : agreesAtOwnPrecision(pred, g) && roundDecimals(pred.value, k).equals(roundDecimals(g, k));
    return { equal, rule: 'rounding' };
  }
  if (hints?.approximate) {
    if (gold.exact?.isInteger()) return null;
    if (goldLiteral && pred.decimals >= goldLiteral.decimals) {
      const d = goldLiteral.decimals;
      return { equal: roundDecimals(pred.value, d).equals(g) || truncateDecimals(pred.value, d).equals(g), rule: 'approximate' };
    }
    return { equal: pred.significant >= 3 && agreesAtOwnPrecision(pred, g), rule: 'approximate' };
  }
  if (gold.exact && !goldLiteral && !gold.exact.isInteger() && pred.significant >= 6 && pred.decimals > 0) {
    return agreesAtOwnPrecision(pred, gold.exact) ? { equal: true, rule: 'significant_digits' } : null;
  }
  if (goldLiteral && agreesAtCoarserPrecision(pred, goldLiteral)) return { equal: true, rule: 'decimal_precision' };
  return null;
}
