import { GraderError } from './errors';

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Largest magnitude (bits of numerator or denominator) an exact value may reach before it is refused. */
export const MAX_EXACT_BITS = 1 << 16;

function bits(x: bigint): number {
  return (x < 0n ? -x : x).toString(16).length * 4;
}

/**
 * Exact rational `n/d` over bigints, always reduced with `d > 0` (docs/design/grading.md rule 3).
 * Operations throw `GraderError('refused_huge')` past {@link MAX_EXACT_BITS} so a grade stays bounded.
 */
export class Rational {
  readonly n: bigint;
  readonly d: bigint;
  constructor(n: bigint, d: bigint = 1n) {
    if (d === 0n) throw new GraderError('division_by_zero', 'division by zero');
    if (d < 0n) [n, d] = [-n, -d];
    const g = gcd(n, d) || 1n;
    this.n = n / g;
    this.d = d / g;
    if (bits(this.n) > MAX_EXACT_BITS || bits(this.d) > MAX_EXACT_BITS)
      throw new GraderError('refused_huge', 'exact value too large to evaluate');
  }
  static readonly ZERO = new Rational(0n);
  static readonly ONE = new Rational(1n);

  /** Parses `-12`, `3.50`, `.4`, `1e-3`, `1.5E6` exactly; returns null for anything else. */
  static parseDecimal(s: string): Rational | null {
    const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(s.trim());
    if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
    const sign = m[1] === '-' ? -1n : 1n;
    const frac = m[3] ?? '';
    let n = BigInt((m[2] || '0') + frac) * sign;
    let d = 10n ** BigInt(frac.length);
    const e = m[4] ? Number(m[4]) : 0;
    if (Math.abs(e) > 4000) throw new GraderError('refused_huge', `exponent ${e} too large`);
    if (e > 0) n *= 10n ** BigInt(e);
    else if (e < 0) d *= 10n ** BigInt(-e);
    return new Rational(n, d);
  }

  add(o: Rational): Rational {
    return new Rational(this.n * o.d + o.n * this.d, this.d * o.d);
  }
  sub(o: Rational): Rational {
    return new Rational(this.n * o.d - o.n * this.d, this.d * o.d);
  }
  mul(o: Rational): Rational {
    return new Rational(this.n * o.n, this.d * o.d);
  }
  div(o: Rational): Rational {
    if (o.n === 0n) throw new GraderError('division_by_zero', 'division by zero');
    return new Rational(this.n * o.d, this.d * o.n);
  }
  neg(): Rational {
    return new Rational(-this.n, this.d);
  }
  /** Integer power; refuses results past the size bound before computing them. */
  pow(k: bigint): Rational {
    if (k < 0n) return Rational.ONE.div(this.pow(-k));
    const est = Math.max(bits(this.n), bits(this.d)) * Number(k);
    if (this.n !== 0n && (this.n !== 1n || this.d !== 1n) && (this.n !== -1n || this.d !== 1n) && est > MAX_EXACT_BITS)
      throw new GraderError('refused_huge', 'power too large to evaluate');
    return new Rational(this.n ** k, this.d ** k);
  }
  isInteger(): boolean {
    return this.d === 1n;
  }
  equals(o: Rational): boolean {
    return this.n === o.n && this.d === o.d;
  }
  sign(): number {
    return this.n === 0n ? 0 : this.n > 0n ? 1 : -1;
  }
  /** Nearest double (0 or ±Infinity when out of range). */
  toNumber(): number {
    const bn = bits(this.n);
    const bd = bits(this.d);
    if (bn < 1000 && bd < 1000) return Number(this.n) / Number(this.d);
    const shift = BigInt(Math.max(0, Math.max(bn, bd) - 900));
    return Number(this.n >> shift) / Number(this.d >> shift);
  }
  toString(): string {
    return this.d === 1n ? this.n.toString() : `${this.n}/${this.d}`;
  }
}

/** Exact k-th root of a rational when it is one (`8`,3 -> 2), else null. */
export function exactRoot(r: Rational, k: number): Rational | null {
  if (r.sign() < 0 && k % 2 === 0) return null;
  const rootInt = (x: bigint): bigint | null => {
    const neg = x < 0n;
    const a = neg ? -x : x;
    let lo = 0n;
    let hi = 1n << BigInt(Math.ceil(bits(a) / k) + 1);
    while (lo < hi) {
      const mid = (lo + hi) / 2n;
      if (mid ** BigInt(k) < a) lo = mid + 1n;
      else hi = mid;
    }
    return lo ** BigInt(k) === a ? (neg ? -lo : lo) : null;
  };
  const n = rootInt(r.n);
  const d = rootInt(r.d);
  return n !== null && d !== null ? new Rational(n, d) : null;
}
