import { decimalLiteral } from './decimal.approximation';
import type { NormalizedAnswer } from './latex.normalizer';
import type { ProblemHints } from './problem.hints';
import type { Rational } from './rational';
import { conversionFactor, parseUnit, sameDimension } from './units';

/** An exact rational as LaTeX: a terminating decimal when it is one, else `\frac{n}{d}`. */
function rationalLatex(r: Rational): string {
  let d = r.d;
  let places = 0;
  while (d % 10n === 0n) {
    d /= 10n;
    places++;
  }
  while (d % 2n === 0n || d % 5n === 0n) {
    if (places > 40) break;
    d = d % 2n === 0n ? d / 2n : d / 5n;
    places++;
  }
  if (d === 1n) {
    const scaled = (r.n * 10n ** BigInt(places)) / r.d;
    const neg = scaled < 0n;
    const digits = (neg ? -scaled : scaled).toString().padStart(places + 1, '0');
    const s = places > 0 ? `${digits.slice(0, -places)}.${digits.slice(-places)}`.replace(/\.?0+$/, '') : digits;
    return (neg ? '-' : '') + s;
  }
  return `\\frac{${r.n}}{${r.d}}`;
}

/**
 * Rule `unit_mismatch` (no problem needed): the prediction and the gold both name a known unit and they
 * differ (`5 m` against `5 cm`); without conversion (docs/design/grading.md rule 5) such a value is not the gold's.
 */
export function unitMismatch(predUnit: string, goldUnit: string): boolean {
  const a = parseUnit(predUnit);
  const b = parseUnit(goldUnit);
  if (!a || !b) return false;
  return !(sameDimension(a, b) && a.factor.equals(b.factor));
}

/**
 * Problem-aware rule `unit`: a prediction that carries a unit of the same kind as the one the problem asks
 * for is converted exactly into it (`1.5 hours` for "how many minutes" -> `90`; `11180 m/s` for
 * "(Unit: 10 ^ 4 m/s)" -> `1.118`); degrees and radians convert when the problem asks for one of them.
 * Null when nothing is converted.
 */
export function convertToUnit(np: NormalizedAnswer, hints: ProblemHints): NormalizedAnswer | null {
  if (hints.angle === 'radians' && np.degrees) return { ...np, text: `\\frac{(${np.text})\\pi}{180}`, degrees: false };
  if (hints.angle === 'degrees' && !np.degrees && /\\pi(?![a-zA-Z])/.test(np.text)) return { ...np, text: `(${np.text})\\cdot\\frac{180}{\\pi}` };
  if (!hints.unit || !np.unit) return null;
  const from = parseUnit(np.unit);
  if (!from || !sameDimension(from, hints.unit)) return null;
  const f = conversionFactor(from, hints.unit);
  if (f.n === f.d) return null;
  const lit = decimalLiteral(np.text);
  const text = lit ? rationalLatex(lit.value.mul(f)) : `(${np.text})\\cdot\\frac{${f.n}}{${f.d}}`;
  return { ...np, text, unit: hints.unit.name };
}
