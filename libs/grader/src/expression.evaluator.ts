import { ComputeEngine } from '@cortex-js/compute-engine';
import { GraderError } from './errors';
import { Rational, exactRoot } from './rational';

/** MathJSON as produced by the compute engine's non-canonical parse. */
export type MathJson = number | string | { num: string } | { str: string } | { sym: string } | MathJson[];

let engine: ComputeEngine | null = null;

/**
 * Parses LaTeX to MathJSON with @cortex-js/compute-engine (non-canonical, so nothing is simplified or
 * evaluated while parsing: a huge power stays a power). Throws `GraderError('unparseable')`.
 */
export function parseLatex(latex: string): MathJson {
  const hit = cache.get(latex);
  if (hit !== undefined) return hit;
  const json = parseUncached(latex);
  // Golds repeat across the rollouts of a group: keep recent parses (results are never mutated).
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(latex, json);
  return json;
}

const CACHE_SIZE = 4096;
const cache = new Map<string, MathJson>();

/** The parser is superlinear on long inputs; longer leaves are refused so a grade stays bounded. */
const MAX_LEAF_CHARS = 600;

function parseUncached(latex: string): MathJson {
  if (latex.length > MAX_LEAF_CHARS) throw new GraderError('refused_huge', `expression longer than ${MAX_LEAF_CHARS} characters`);
  engine ??= new ComputeEngine();
  let json: MathJson;
  try {
    json = engine.parse(latex, { form: 'raw' }).json as MathJson;
  } catch (e) {
    throw new GraderError('unparseable', `cannot parse "${latex}": ${(e as Error).message}`);
  }
  if (containsError(json)) throw new GraderError('unparseable', `cannot parse "${latex}"`);
  return json;
}

function containsError(j: MathJson): boolean {
  if (Array.isArray(j)) return j[0] === 'Error' || j.some((x) => containsError(x));
  return false;
}

/** A value: exact when every step was rational, and always a double approximation (NaN when undefined). */
export interface Value {
  exact: Rational | null;
  approx: number;
}

const CONSTANTS: Record<string, number> = {
  Pi: Math.PI,
  e: Math.E,
  ExponentialE: Math.E,
  PositiveInfinity: Infinity,
  NegativeInfinity: -Infinity,
  ComplexInfinity: NaN,
  Half: 0.5,
};

const FUNCTIONS: Record<string, (x: number) => number> = {
  Sin: Math.sin,
  Cos: Math.cos,
  Tan: Math.tan,
  Sec: (x) => 1 / Math.cos(x),
  Csc: (x) => 1 / Math.sin(x),
  Cot: (x) => 1 / Math.tan(x),
  Arcsin: Math.asin,
  Arccos: Math.acos,
  Arctan: Math.atan,
  Arsinh: Math.asinh,
  Sinh: Math.sinh,
  Cosh: Math.cosh,
  Tanh: Math.tanh,
  Exp: Math.exp,
  Floor: Math.floor,
  Ceil: Math.ceil,
};

/** Letters read as function names when followed by `(..)`; any other letter before `(` multiplies. */
const FUNCTION_LETTER = /^[fghFGH]$/;

/** Largest n for which `n!` is evaluated exactly; larger factorials are refused (rule 6). */
const MAX_FACTORIAL = 5000;

const exactV = (r: Rational): Value => ({ exact: r, approx: r.toNumber() });
const approxV = (x: number): Value => ({ exact: null, approx: x });

/** A symbol name for a subscripted or otherwise compound name (`F_k`). */
function nameOf(j: MathJson): string {
  return typeof j === 'string' ? j : JSON.stringify(j);
}

/** An unknown function `f(x)`: a fixed pseudo-random function per name, so `f(x)` = `f(x)` but not `f(y)`. */
function opaqueFunction(name: string, args: number[]): number {
  let h = 7;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) % 1000003;
  return args.reduce((acc, a, i) => acc + Math.sin(a * (1.3 + (h % 97) / 50) + i + h / 7919) * (2 + i), h / 1000003);
}

function symbolValue(name: string, env: ReadonlyMap<string, number>): Value {
  if (name in CONSTANTS) return approxV(CONSTANTS[name]);
  const v = env.get(name);
  if (v === undefined) throw new GraderError('unsupported', `free variable ${name}`);
  return approxV(v);
}

function add(a: Value, b: Value): Value {
  return a.exact && b.exact ? exactV(a.exact.add(b.exact)) : approxV(a.approx + b.approx);
}
function mul(a: Value, b: Value): Value {
  return a.exact && b.exact ? exactV(a.exact.mul(b.exact)) : approxV(a.approx * b.approx);
}
function div(a: Value, b: Value): Value {
  if (b.exact && b.exact.sign() === 0) throw new GraderError('division_by_zero', 'division by zero');
  return a.exact && b.exact ? exactV(a.exact.div(b.exact)) : approxV(a.approx / b.approx);
}
function neg(a: Value): Value {
  return a.exact ? exactV(a.exact.neg()) : approxV(-a.approx);
}

function power(base: Value, exp: Value): Value {
  if (exp.exact && base.exact) {
    const e = exp.exact;
    const b = base.exact;
    const unit = b.isInteger() && (b.n === 1n || b.n === -1n);
    if (e.isInteger() && unit) return exactV(e.n % 2n === 0n ? Rational.ONE : b);
    if (e.isInteger() && b.sign() === 0) {
      if (e.n <= 0n) throw new GraderError('division_by_zero', '0 to a non-positive power');
      return exactV(Rational.ZERO);
    }
    if (e.isInteger()) {
      if (e.n > 1_000_000n || e.n < -1_000_000n) throw new GraderError('refused_huge', 'power too large to evaluate');
      return exactV(b.pow(e.n));
    }
    if (e.d <= 64n && b.sign() > 0) {
      const root = exactRoot(b, Number(e.d));
      if (root) return exactV(root.pow(e.n));
    }
  }
  if (exp.exact && !exp.exact.isInteger() && Math.abs(exp.approx) > 1e6) throw new GraderError('refused_huge', 'power too large');
  if (Math.abs(exp.approx) > 1e6 && Math.abs(base.approx) !== 1) throw new GraderError('refused_huge', 'power too large to evaluate');
  return approxV(Math.pow(base.approx, exp.approx));
}

function factorial(a: Value): Value {
  if (!a.exact || !a.exact.isInteger() || a.exact.sign() < 0) return approxV(NaN);
  if (a.exact.n > BigInt(MAX_FACTORIAL)) throw new GraderError('refused_huge', 'factorial too large to evaluate');
  let r = 1n;
  for (let k = 2n; k <= a.exact.n; k++) r *= k;
  return exactV(new Rational(r));
}

function binomial(n: Value, k: Value): Value {
  if (!n.exact?.isInteger() || !k.exact?.isInteger()) return approxV(NaN);
  if (n.exact.n > BigInt(MAX_FACTORIAL)) throw new GraderError('refused_huge', 'binomial too large');
  let r = 1n;
  const kk = k.exact.n;
  if (kk < 0n || kk > n.exact.n) return exactV(Rational.ZERO);
  for (let i = 0n; i < kk; i++) r = (r * (n.exact.n - i)) / (i + 1n);
  return exactV(new Rational(r));
}

/**
 * Evaluates MathJSON to a {@link Value}: exact rational arithmetic while every step is rational
 * (bigint; refusing huge powers and factorials instead of evaluating them, docs/design/grading.md rule 6), doubles
 * otherwise; free variables take their values from `env`. Throws `GraderError` (unsupported construct,
 * unbound variable, division by zero, refused size).
 */
export function evaluate(j: MathJson, env: ReadonlyMap<string, number> = new Map()): Value {
  if (typeof j === 'number') {
    if (!Number.isFinite(j)) return approxV(j);
    const r = Rational.parseDecimal(String(j));
    return r ? exactV(r) : approxV(j);
  }
  if (typeof j === 'string') return symbolValue(j, env);
  if (!Array.isArray(j)) {
    if ('num' in j) {
      const s = j.num.replace(/n$/, '');
      if (/^[+-]?Infinity$/.test(s)) return approxV(s.startsWith('-') ? -Infinity : Infinity);
      const r = Rational.parseDecimal(s);
      if (!r) throw new GraderError('unsupported', `number ${j.num}`);
      return exactV(r);
    }
    if ('sym' in j) return symbolValue(j.sym, env);
    throw new GraderError('unsupported', 'string literal');
  }
  const [head, ...args] = j as [MathJson, ...MathJson[]];
  const ev = (x: MathJson): Value => evaluate(x, env);
  switch (head) {
    case 'Add':
      return args.map(ev).reduce(add);
    case 'Subtract':
      return args.length === 1 ? neg(ev(args[0])) : args.map(ev).reduce((a, b) => add(a, neg(b)));
    case 'Negate':
      return neg(ev(args[0]));
    case 'Multiply':
      return args.map(ev).reduce(mul);
    case 'InvisibleOperator':
      return invisible(args, env);
    case 'Divide':
    case 'Rational':
      return div(ev(args[0]), ev(args[1]));
    case 'Power': {
      // e^{\ln x} = x exactly.
      const lnArg = unwrap(args[1]);
      if ((args[0] === 'e' || args[0] === 'ExponentialE') && Array.isArray(lnArg) && lnArg[0] === 'Ln') return ev(lnArg[1]);
      // (\sqrt a)^(2k) and (\sqrt[n] a)^(nk) stay exact.
      const b = unwrap(args[0]);
      const e = ev(args[1]);
      const rootIndex = Array.isArray(b) && b[0] === 'Sqrt' ? 2n : Array.isArray(b) && b[0] === 'Root' ? ev(b[2]).exact : null;
      const k = typeof rootIndex === 'bigint' ? rootIndex : rootIndex?.isInteger() ? rootIndex.n : null;
      if (k && k > 0n && e.exact?.isInteger() && e.exact.n % k === 0n && Array.isArray(b)) {
        const radicand = ev(b[1]);
        if (radicand.exact && radicand.exact.sign() >= 0) return exactV(radicand.exact.pow(e.exact.n / k));
      }
      return power(ev(args[0]), e);
    }
    case 'Square':
      return power(ev(args[0]), exactV(new Rational(2n)));
    case 'Sqrt':
      return power(ev(args[0]), exactV(new Rational(1n, 2n)));
    case 'Root': {
      const k = ev(args[1]);
      if (!k.exact || k.exact.sign() <= 0) throw new GraderError('unsupported', 'root index');
      const x = ev(args[0]);
      if (x.exact && x.exact.sign() < 0 && k.exact.isInteger() && k.exact.n % 2n === 1n) return neg(power(neg(x), div(exactV(Rational.ONE), k)));
      return power(x, div(exactV(Rational.ONE), k));
    }
    case 'Factorial':
      return factorial(ev(args[0]));
    case 'Binomial':
      return binomial(ev(args[0]), ev(args[1]));
    case 'Abs': {
      const x = ev(args[0]);
      return x.exact ? exactV(x.exact.sign() < 0 ? x.exact.neg() : x.exact) : approxV(Math.abs(x.approx));
    }
    case 'Ln': {
      // ln(e^k) = k exactly.
      const a = unwrap(args[0]);
      if (Array.isArray(a) && a[0] === 'Power' && (a[1] === 'e' || a[1] === 'ExponentialE')) {
        const k = ev(a[2]);
        if (k.exact) return k;
      }
      if (a === 'e' || a === 'ExponentialE') return exactV(Rational.ONE);
      return approxV(Math.log(ev(args[0]).approx));
    }
    case 'Lb':
    case 'Lg':
    case 'Log': {
      const x = ev(args[0]);
      const base = head === 'Lb' ? exactV(new Rational(2n)) : args.length > 1 ? ev(args[1]) : exactV(new Rational(10n));
      const exactLog = exactLogarithm(x, base);
      if (exactLog) return exactV(exactLog);
      return approxV(Math.log(x.approx) / Math.log(base.approx));
    }
    case 'Delimiter':
      if (args.length === 1 && !(Array.isArray(args[0]) && args[0][0] === 'Sequence')) return ev(args[0]);
      throw new GraderError('unsupported', 'a tuple is not a number');
    case 'Subscript':
      return symbolValue(nameOf(j), env);
    case 'Hold':
      return ev(args[0]);
    default:
      break;
  }
  if (typeof head === 'string' && head in FUNCTIONS) {
    const x = ev(args[0]);
    if (head === 'Exp' && x.exact?.sign() === 0) return exactV(Rational.ONE);
    return approxV(FUNCTIONS[head](x.approx));
  }
  if (typeof head === 'string' && FUNCTION_LETTER.test(head)) return approxV(opaqueFunction(head, args.map((a) => ev(a).approx)));
  throw new GraderError('unsupported', `unsupported construct ${typeof head === 'string' ? head : JSON.stringify(head)}`);
}

/** Strips `Delimiter` (parentheses) around a single expression. */
function unwrap(j: MathJson): MathJson {
  while (Array.isArray(j) && j[0] === 'Delimiter' && j.length === 2) j = j[1];
  return j;
}

/** `log_b x` as an exact integer k when `b^k = x` for rationals b and x; else null. */
function exactLogarithm(x: Value, b: Value): Rational | null {
  if (!x.exact || !b.exact || x.exact.sign() <= 0 || b.exact.sign() <= 0 || b.exact.equals(Rational.ONE)) return null;
  const k = Math.round(Math.log(x.approx) / Math.log(b.approx));
  if (!Number.isFinite(k) || Math.abs(k) > 4096) return null;
  try {
    return b.exact.pow(BigInt(k)).equals(x.exact) ? new Rational(BigInt(k)) : null;
  } catch {
    return null;
  }
}

/** Juxtaposition: products, except a function name followed by a parenthesised argument (`f(x)`, `\sqrt(2)`). */
function invisible(args: MathJson[], env: ReadonlyMap<string, number>): Value {
  const out: Value[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const next = args[i + 1];
    const isCall = Array.isArray(next) && next[0] === 'Delimiter';
    if (typeof a === 'string' && isCall && (a in FUNCTIONS || a === 'Sqrt')) {
      const inner = evaluate(next, env);
      out.push(a === 'Sqrt' ? power(inner, exactV(new Rational(1n, 2n))) : approxV(FUNCTIONS[a](inner.approx)));
      i++;
    } else if (typeof a === 'string' && FUNCTION_LETTER.test(a) && isCall && !env.has(a) && !(a in CONSTANTS)) {
      out.push(approxV(opaqueFunction(a, [evaluate(next, env).approx])));
      i++;
    } else out.push(evaluate(a, env));
  }
  return out.reduce(mul);
}

/** Names of the free variables in an expression (constants and function heads excluded). */
export function freeVariables(j: MathJson, acc: Set<string> = new Set()): Set<string> {
  if (typeof j === 'string') {
    if (!(j in CONSTANTS) && !(j in FUNCTIONS) && j !== 'Sqrt') acc.add(j);
  } else if (Array.isArray(j)) {
    if (j[0] === 'Subscript') acc.add(nameOf(j));
    else {
      const [head, ...args] = j;
      if (head === 'InvisibleOperator') {
        // A lone letter followed by `(..)` is a function call, not a variable.
        args.forEach((a, i) => {
          const next = args[i + 1];
          if (!(typeof a === 'string' && FUNCTION_LETTER.test(a) && Array.isArray(next) && next[0] === 'Delimiter')) freeVariables(a, acc);
        });
      } else args.forEach((a) => freeVariables(a, acc));
    }
  } else if (typeof j === 'object' && 'sym' in j) acc.add(j.sym);
  return acc;
}
