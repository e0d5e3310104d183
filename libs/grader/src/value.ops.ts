import { GraderError } from './errors';
import type { Value } from './expression.evaluator';
import { Rational } from './rational';

/** Arithmetic on {@link Value}s: exact while both operands are exact rationals, doubles otherwise. */
export const exactV = (r: Rational): Value => ({ exact: r, approx: r.toNumber() });
export const approxV = (x: number): Value => ({ exact: null, approx: x });
export const ZERO: Value = { exact: Rational.ZERO, approx: 0 };
export const ONE: Value = { exact: Rational.ONE, approx: 1 };

/** True when the value is zero: exactly, or as a double when it is not exact. */
export function isZero(a: Value): boolean {
  return a.exact ? a.exact.sign() === 0 : a.approx === 0;
}
export function vAdd(a: Value, b: Value): Value {
  return a.exact && b.exact ? exactV(a.exact.add(b.exact)) : approxV(a.approx + b.approx);
}
export function vSub(a: Value, b: Value): Value {
  return a.exact && b.exact ? exactV(a.exact.sub(b.exact)) : approxV(a.approx - b.approx);
}
export function vMul(a: Value, b: Value): Value {
  if ((a.exact && a.exact.sign() === 0) || (b.exact && b.exact.sign() === 0)) return ZERO;
  return a.exact && b.exact ? exactV(a.exact.mul(b.exact)) : approxV(a.approx * b.approx);
}
/** Throws `GraderError('division_by_zero')` for an exact zero divisor. */
export function vDiv(a: Value, b: Value): Value {
  if (b.exact && b.exact.sign() === 0) throw new GraderError('division_by_zero', 'division by zero');
  return a.exact && b.exact ? exactV(a.exact.div(b.exact)) : approxV(a.approx / b.approx);
}
