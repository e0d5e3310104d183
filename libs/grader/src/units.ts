import { Rational } from './rational';

/**
 * Units an answer or a problem may name, for the problem-aware unit rule and the unit-mismatch rule
 * (GRADING-RULES.md). A unit is a product of base dimensions with an exact factor to the base unit of
 * each (metre, second, gram, dollar, degree); conversion is exact.
 */
export interface UnitSpec {
  /** Dimension exponents, e.g. `{L: 1, T: -1}` for m/s. */
  dims: Record<string, number>;
  /** Exact factor to the base units (cm = 1/100 m; `10^4 m/s` = 10000). */
  factor: Rational;
  /** The text it was read from. */
  name: string;
}

const q = (s: string): Rational => Rational.parseDecimal(s) as Rational;

const BASE: [RegExp, string, Rational][] = [
  [/^(?:mm|millimet(?:er|re)s?)$/, 'L', q('0.001')],
  [/^(?:cm|centimet(?:er|re)s?)$/, 'L', q('0.01')],
  [/^(?:m|met(?:er|re)s?)$/, 'L', q('1')],
  [/^(?:km|kilomet(?:er|re)s?)$/, 'L', q('1000')],
  [/^(?:in|inch|inches)$/, 'L', q('0.0254')],
  [/^(?:ft|foot|feet)$/, 'L', q('0.3048')],
  [/^(?:yd|yards?)$/, 'L', q('0.9144')],
  [/^(?:mi|miles?)$/, 'L', q('1609.344')],
  [/^(?:s|sec|secs|seconds?)$/, 'T', q('1')],
  [/^(?:min|mins|minutes?)$/, 'T', q('60')],
  [/^(?:h|hr|hrs|hours?)$/, 'T', q('3600')],
  [/^(?:days?)$/, 'T', q('86400')],
  [/^(?:weeks?)$/, 'T', q('604800')],
  [/^(?:mg|milligrams?)$/, 'M', q('0.001')],
  [/^(?:g|grams?)$/, 'M', q('1')],
  [/^(?:kg|kilograms?)$/, 'M', q('1000')],
  [/^(?:lb|lbs|pounds?)$/, 'M', q('453.59237')],
  [/^(?:oz|ounces?)$/, 'M', q('28.349523125')],
  [/^(?:dollars?|usd)$/, '$', q('1')],
  [/^(?:cents?)$/, '$', q('0.01')],
  [/^(?:degrees?|deg)$/, 'A', q('1')],
];
/** Volumes named as such: litre = 1/1000 m^3. */
const VOLUME: [RegExp, Rational][] = [
  [/^(?:ml|millilit(?:er|re)s?)$/i, q('0.000001')],
  [/^(?:l|lit(?:er|re)s?)$/i, q('0.001')],
];

function single(word: string): { dims: Record<string, number>; factor: Rational } | null {
  const w = word.trim();
  for (const [re, f] of VOLUME) if (re.test(w)) return { dims: { L: 3 }, factor: f };
  const lw = w.toLowerCase();
  if (lw === 'mph') return { dims: { L: 1, T: -1 }, factor: q('1609.344').div(q('3600')) };
  for (const [re, dim, f] of BASE) if (re.test(lw)) return { dims: { [dim]: 1 }, factor: f };
  return null;
}

function powered(u: { dims: Record<string, number>; factor: Rational }, k: number): { dims: Record<string, number>; factor: Rational } {
  return { dims: Object.fromEntries(Object.entries(u.dims).map(([d, e]) => [d, e * k])), factor: u.factor.pow(BigInt(k)) };
}

/** One factor: `cm`, `cm^2`, `square feet`, `sq in`, `cubic meters`. */
function factorUnit(text: string): { dims: Record<string, number>; factor: Rational } | null {
  let t = text.trim().replace(/[{}]/g, '');
  let k = 1;
  const pre = /^(square|sq\.?|cubic)\s+/i.exec(t);
  if (pre) {
    k = /^cubic/i.test(pre[1]) ? 3 : 2;
    t = t.slice(pre[0].length);
  }
  const post = /\s*\^\s*([23])$/.exec(t);
  if (post) {
    k = Number(post[1]);
    t = t.slice(0, post.index);
  }
  const u = single(t);
  return u ? powered(u, k) : null;
}

/**
 * Reads a unit (`cm`, `m/s`, `km per hour`, `square feet`, `10 ^ 4 m/s`, `\text{cm}^2`); null when a part
 * is unknown. A leading power of ten (`10^4 m/s`, TheoremQA's unit lines) scales the factor.
 */
export function parseUnit(text: string): UnitSpec | null {
  let t = text.trim().replace(/\\(?:text|mathrm|mbox)\s*\{([^}]*)\}/g, '$1').replace(/\\/g, '');
  let scale = Rational.ONE;
  const pow = /^10\s*\^\s*\{?\s*(-?\d+)\s*\}?\s*/.exec(t);
  if (pow) {
    scale = new Rational(10n).pow(BigInt(pow[1]));
    t = t.slice(pow[0].length);
  }
  if (!t) return null;
  const [num, den, extra] = t.split(/\s*(?:\/|\bper\b)\s*/i);
  if (extra !== undefined || !num) return null;
  const a = factorUnit(num);
  if (!a) return null;
  let dims = a.dims;
  let factor = a.factor;
  if (den !== undefined) {
    const b = factorUnit(den);
    if (!b) return null;
    dims = { ...dims };
    for (const [d, e] of Object.entries(b.dims)) dims[d] = (dims[d] ?? 0) - e;
    factor = factor.div(b.factor);
  }
  return { dims: Object.fromEntries(Object.entries(dims).filter(([, e]) => e !== 0)), factor: factor.mul(scale), name: text.trim() };
}

/** Both units measure the same quantity (same dimension exponents). */
export function sameDimension(a: UnitSpec, b: UnitSpec): boolean {
  const keys = new Set([...Object.keys(a.dims), ...Object.keys(b.dims)]);
  return [...keys].every((k) => (a.dims[k] ?? 0) === (b.dims[k] ?? 0));
}

/** The factor that converts a value in `from` into `to` (same dimension), exactly. */
export function conversionFactor(from: UnitSpec, to: UnitSpec): Rational {
  return from.factor.div(to.factor);
}
