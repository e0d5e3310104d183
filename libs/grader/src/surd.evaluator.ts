import { GraderError } from './errors';
import type { MathJson } from './expression.evaluator';
import { Rational } from './rational';

/**
 * Exact values in the field of rationals extended by square roots: a sum of `q * sqrt(r)` with r a
 * square-free positive integer (r = 1 for the rational part). Used where doubles cannot decide, e.g. a
 * product of conjugate radicals against an integer gold (rule 3 forbids a tolerance there).
 */
export type Surd = Map<bigint, Rational>;

const MAX_TERMS = 16;
/** Radicands are factored by trial division up to this bound (larger ones with a big prime factor are refused). */
const TRIAL_LIMIT = 100_000n;

function unsupported(what: string): never {
  throw new GraderError('unsupported', `no exact radical form: ${what}`);
}

/** `n = s^2 * r` with r square-free: returns [s, r]. */
function squareFree(n: bigint): [bigint, bigint] {
  let s = 1n;
  let r = 1n;
  let m = n;
  for (let p = 2n; p * p <= m; p += p === 2n ? 1n : 2n) {
    if (p > TRIAL_LIMIT) unsupported('radicand too large to factor');
    let e = 0;
    while (m % p === 0n) {
      m /= p;
      e++;
    }
    if (e >= 2) s *= p ** BigInt(Math.floor(e / 2));
    if (e % 2 === 1) r *= p;
  }
  return [s, r * m];
}

function clean(x: Surd): Surd {
  for (const [k, v] of x) if (v.sign() === 0) x.delete(k);
  if (x.size > MAX_TERMS) unsupported('too many terms');
  return x;
}

const rational = (q: Rational): Surd => clean(new Map([[1n, q]]));

function add(a: Surd, b: Surd, sign = 1): Surd {
  const out = new Map(a);
  for (const [k, v] of b) out.set(k, (out.get(k) ?? Rational.ZERO).add(sign === 1 ? v : v.neg()));
  return clean(out);
}

function mul(a: Surd, b: Surd): Surd {
  let out: Surd = new Map();
  for (const [ka, va] of a)
    for (const [kb, vb] of b) {
      // sqrt(a) sqrt(b) = g sqrt(a/g * b/g) with g = gcd(a, b) (both square-free).
      let g = ka;
      let h = kb;
      while (h) [g, h] = [h, g % h];
      const term: Surd = new Map([[(ka / g) * (kb / g), va.mul(vb).mul(new Rational(g))]]);
      out = add(out, term);
    }
  return out;
}

function sqrtOf(x: Surd): Surd {
  if (x.size === 0) return new Map();
  if (x.size !== 1 || !x.has(1n)) unsupported('square root of an irrational');
  const q = x.get(1n) as Rational;
  if (q.sign() < 0) unsupported('square root of a negative number');
  // sqrt(n/d) = sqrt(n d) / d
  const [s, r] = squareFree(q.n * q.d);
  return clean(new Map([[r, new Rational(s, q.d)]]));
}

function inverse(x: Surd): Surd {
  if (x.size === 0) throw new GraderError('division_by_zero', 'division by zero');
  if (x.size === 1) {
    const [[k, v]] = [...x];
    // 1 / (v sqrt(k)) = sqrt(k) / (v k)
    return clean(new Map([[k, Rational.ONE.div(v.mul(new Rational(k)))]]));
  }
  if (x.size === 2 && x.has(1n)) {
    // 1 / (a + b sqrt(k)) = (a - b sqrt(k)) / (a^2 - b^2 k)
    const a = x.get(1n) as Rational;
    const [k, b] = [...x].find(([key]) => key !== 1n) as [bigint, Rational];
    const den = a.mul(a).sub(b.mul(b).mul(new Rational(k)));
    return clean(new Map([[1n, a.div(den)], [k, b.neg().div(den)]]));
  }
  return unsupported('division by a sum of several radicals');
}

function power(b: Surd, e: Surd): Surd {
  if (e.size > 1 || (e.size === 1 && !e.has(1n))) unsupported('irrational exponent');
  const q = e.get(1n) ?? Rational.ZERO;
  if (q.equals(new Rational(1n, 2n))) return sqrtOf(b);
  if (!q.isInteger() || q.n > 64n || q.n < -64n) unsupported('exponent');
  let k = q.n < 0n ? -q.n : q.n;
  let acc: Surd = rational(Rational.ONE);
  let base = b;
  while (k > 0n) {
    if (k & 1n) acc = mul(acc, base);
    base = mul(base, base);
    k >>= 1n;
  }
  return q.n < 0n ? inverse(acc) : acc;
}

function literal(j: MathJson): Rational | null {
  if (typeof j === 'number') return Number.isFinite(j) ? Rational.parseDecimal(String(j)) : null;
  if (typeof j === 'object' && !Array.isArray(j) && 'num' in j) return Rational.parseDecimal(j.num.replace(/n$/, ''));
  return null;
}

/**
 * Evaluates a constant MathJSON expression built from rationals with `+ - * /`, integer powers and square
 * roots, exactly. Throws `GraderError('unsupported')` for anything else (other functions, pi, e, roots of
 * irrationals, division by a sum of more than two terms).
 */
export function evaluateSurd(j: MathJson): Surd {
  const lit = literal(j);
  if (lit) return rational(lit);
  if (!Array.isArray(j)) return unsupported(typeof j === 'string' ? j : 'symbol');
  const [head, ...args] = j as [MathJson, ...MathJson[]];
  switch (head) {
    case 'Add':
      return args.map(evaluateSurd).reduce((a, b) => add(a, b));
    case 'Subtract':
      return args.length === 1 ? add(new Map(), evaluateSurd(args[0]), -1) : args.map(evaluateSurd).reduce((a, b) => add(a, b, -1));
    case 'Negate':
      return add(new Map(), evaluateSurd(args[0]), -1);
    case 'Multiply':
    case 'InvisibleOperator':
      return args.map(evaluateSurd).reduce(mul);
    case 'Divide':
    case 'Rational':
      return mul(evaluateSurd(args[0]), inverse(evaluateSurd(args[1])));
    case 'Power':
      return power(evaluateSurd(args[0]), evaluateSurd(args[1]));
    case 'Square':
      return power(evaluateSurd(args[0]), rational(new Rational(2n)));
    case 'Sqrt':
      return sqrtOf(evaluateSurd(args[0]));
    case 'Delimiter':
    case 'Hold':
      if (args.length === 1) return evaluateSurd(args[0]);
      break;
    default:
      break;
  }
  return unsupported(typeof head === 'string' ? head : 'construct');
}

/** Exact equality of two radical expressions; null when either has no exact radical form. */
export function surdsEqual(a: MathJson, b: MathJson): boolean | null {
  try {
    const x = evaluateSurd(a);
    const y = evaluateSurd(b);
    if (x.size !== y.size) return false;
    for (const [k, v] of x) if (!y.get(k)?.equals(v)) return false;
    return true;
  } catch (e) {
    if (e instanceof GraderError) return null;
    throw e;
  }
}
