import { GraderError } from './errors';
import { evaluate, type MathJson, type Value } from './expression.evaluator';
import { Rational } from './rational';
import { approxV, exactV, ONE, vAdd, vDiv, vMul, vSub, ZERO } from './value.ops';

/** A complex value: real and imaginary parts, each exact when every step was rational (Gaussian rationals). */
export interface ComplexValue {
  re: Value;
  im: Value;
}

const IMAGINARY = new Set(['i', 'ImaginaryUnit']);
const real = (v: Value): ComplexValue => ({ re: v, im: ZERO });
const add = vAdd;
const sub = vSub;
const mul = vMul;
const div = vDiv;

function cAdd(a: ComplexValue, b: ComplexValue): ComplexValue {
  return { re: add(a.re, b.re), im: add(a.im, b.im) };
}
function cNeg(a: ComplexValue): ComplexValue {
  return { re: sub(ZERO, a.re), im: sub(ZERO, a.im) };
}
function cMul(a: ComplexValue, b: ComplexValue): ComplexValue {
  return { re: sub(mul(a.re, b.re), mul(a.im, b.im)), im: add(mul(a.re, b.im), mul(a.im, b.re)) };
}
function cDiv(a: ComplexValue, b: ComplexValue): ComplexValue {
  const den = add(mul(b.re, b.re), mul(b.im, b.im));
  if (den.exact ? den.exact.sign() === 0 : den.approx === 0) throw new GraderError('division_by_zero', 'division by zero');
  const conj = { re: b.re, im: sub(ZERO, b.im) };
  const n = cMul(a, conj);
  return { re: div(n.re, den), im: div(n.im, den) };
}
function cExp(z: ComplexValue): ComplexValue {
  const m = Math.exp(z.re.approx);
  if (z.im.exact?.sign() === 0) return real(z.re.exact?.sign() === 0 ? ONE : approxV(m));
  return { re: approxV(m * Math.cos(z.im.approx)), im: approxV(m * Math.sin(z.im.approx)) };
}
function cLog(z: ComplexValue): ComplexValue {
  return { re: approxV(Math.log(Math.hypot(z.re.approx, z.im.approx))), im: approxV(Math.atan2(z.im.approx, z.re.approx)) };
}
function cPow(b: ComplexValue, e: ComplexValue): ComplexValue {
  if (e.im.exact?.sign() === 0 && e.re.exact?.isInteger()) {
    let k = e.re.exact.n;
    if (k > 4096n || k < -4096n) throw new GraderError('refused_huge', 'complex power too large');
    const neg = k < 0n;
    if (neg) k = -k;
    let acc: ComplexValue = real(ONE);
    let base = b;
    while (k > 0n) {
      if (k & 1n) acc = cMul(acc, base);
      base = cMul(base, base);
      k >>= 1n;
    }
    return neg ? cDiv(real(ONE), acc) : acc;
  }
  if (b.re.exact?.sign() === 0 && b.im.exact?.sign() === 0) return real(ZERO);
  return cExp(cMul(e, cLog(b)));
}
function cSqrt(z: ComplexValue): ComplexValue {
  // sqrt of a negative real is i*sqrt(|x|), exactly when |x| is a rational square.
  if (z.im.exact?.sign() === 0 && z.re.approx < 0) {
    const r = z.re.exact?.neg();
    const pos = r ? evaluate(['Sqrt', ['Divide', { num: r.n.toString() }, { num: r.d.toString() }]]) : approxV(Math.sqrt(-z.re.approx));
    return { re: ZERO, im: pos };
  }
  return cPow(z, real(exactV(new Rational(1n, 2n))));
}

function hasImaginary(j: MathJson): boolean {
  if (typeof j === 'string') return IMAGINARY.has(j);
  if (Array.isArray(j)) return j.some(hasImaginary);
  return typeof j === 'object' && 'sym' in j && IMAGINARY.has(j.sym);
}

const TRIG: Record<string, (z: ComplexValue) => ComplexValue> = {
  Sin: (z) => ({ re: approxV(Math.sin(z.re.approx) * Math.cosh(z.im.approx)), im: approxV(Math.cos(z.re.approx) * Math.sinh(z.im.approx)) }),
  Cos: (z) => ({ re: approxV(Math.cos(z.re.approx) * Math.cosh(z.im.approx)), im: approxV(-Math.sin(z.re.approx) * Math.sinh(z.im.approx)) }),
};

/**
 * Evaluates a constant MathJSON expression over the complex numbers (`i`, `\mathrm{i}` the imaginary
 * unit): `+ - * /`, integer powers exactly (Gaussian rationals), other powers, `e^z`, `\exp`, `\sqrt`,
 * `\sin`/`\cos` of complex arguments; subexpressions without `i` go to the real evaluator. Throws
 * `GraderError` for anything else (the caller then keeps the real-valued verdict).
 */
export function evaluateComplex(j: MathJson): ComplexValue {
  if (!hasImaginary(j)) return real(evaluate(j));
  if (typeof j === 'string' || (typeof j === 'object' && !Array.isArray(j))) return { re: ZERO, im: ONE };
  const [head, ...args] = j as [MathJson, ...MathJson[]];
  switch (head) {
    case 'Add':
      return args.map(evaluateComplex).reduce(cAdd);
    case 'Subtract':
      return args.length === 1 ? cNeg(evaluateComplex(args[0])) : args.map(evaluateComplex).reduce((a, b) => cAdd(a, cNeg(b)));
    case 'Negate':
      return cNeg(evaluateComplex(args[0]));
    case 'Multiply':
    case 'InvisibleOperator':
      return args.map(evaluateComplex).reduce(cMul);
    case 'Divide':
    case 'Rational':
      return cDiv(evaluateComplex(args[0]), evaluateComplex(args[1]));
    case 'Power': {
      const base = args[0];
      const e = evaluateComplex(args[1]);
      if (base === 'e' || base === 'ExponentialE') return cExp(e);
      return cPow(evaluateComplex(base), e);
    }
    case 'Square':
      return cPow(evaluateComplex(args[0]), real(exactV(new Rational(2n))));
    case 'Exp':
      return cExp(evaluateComplex(args[0]));
    case 'Sqrt':
      return cSqrt(evaluateComplex(args[0]));
    case 'Delimiter':
      if (args.length === 1) return evaluateComplex(args[0]);
      break;
    case 'Hold':
      return evaluateComplex(args[0]);
    case 'Abs': {
      const z = evaluateComplex(args[0]);
      return real(approxV(Math.hypot(z.re.approx, z.im.approx)));
    }
    default:
      if (typeof head === 'string' && head in TRIG) return TRIG[head](evaluateComplex(args[0]));
  }
  throw new GraderError('unsupported', `no complex evaluation for ${typeof head === 'string' ? head : JSON.stringify(head)}`);
}

/** The expression names the imaginary unit (`i`, `\mathrm{i}`) and no other free variable. */
export function isComplexConstant(vars: Set<string>): boolean {
  return vars.size > 0 && [...vars].every((v) => IMAGINARY.has(v));
}
