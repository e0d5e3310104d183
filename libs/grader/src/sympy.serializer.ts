import { GraderError } from './errors';
import type { MathJson } from './expression.evaluator';

const FUNCS: Record<string, string> = {
  Sin: 'sin', Cos: 'cos', Tan: 'tan', Sec: 'sec', Csc: 'csc', Cot: 'cot', Arcsin: 'asin', Arccos: 'acos',
  Arctan: 'atan', Sinh: 'sinh', Cosh: 'cosh', Tanh: 'tanh', Exp: 'exp', Ln: 'log', Sqrt: 'sqrt',
  Factorial: 'factorial', Abs: 'Abs', Floor: 'floor', Ceil: 'ceiling', Binomial: 'binomial',
};
const SYMBOLS: Record<string, string> = {
  Pi: 'pi', e: 'E', ExponentialE: 'E', PositiveInfinity: 'oo', NegativeInfinity: '-oo', Half: 'Rational(1, 2)',
};

/** Options of {@link toSympy}. */
export interface SympyOptions {
  /** `i` is the imaginary unit (the expression has no other free variable), not a variable named i. */
  imaginary?: boolean;
}

function symbol(name: string, opts: SympyOptions): string {
  if (name in SYMBOLS) return SYMBOLS[name];
  if (name === 'ImaginaryUnit' || (opts.imaginary && name === 'i')) return 'I';
  return `Symbol(${JSON.stringify(name)})`;
}

/**
 * Serialises MathJSON to a sympy expression string (numbers exact: `Rational("0.25")`), for the
 * sympy backend. Throws `GraderError('unsupported')` for constructs it does not map.
 */
export function toSympy(j: MathJson, opts: SympyOptions = {}): string {
  if (typeof j === 'number') return Number.isInteger(j) ? `Integer(${JSON.stringify(String(BigInt(j)))})` : `Rational(${JSON.stringify(String(j))})`;
  if (typeof j === 'string') return symbol(j, opts);
  if (!Array.isArray(j)) {
    if ('num' in j) return `Rational(${JSON.stringify(j.num.replace(/n$/, ''))})`;
    if ('sym' in j) return symbol(j.sym, opts);
    throw new GraderError('unsupported', 'string literal');
  }
  const [head, ...args] = j as [MathJson, ...MathJson[]];
  const a = args.map((x) => toSympy(x, opts));
  switch (head) {
    case 'Add':
      return `(${a.join(' + ')})`;
    case 'Subtract':
      return a.length === 1 ? `(-${a[0]})` : `(${a.join(' - ')})`;
    case 'Negate':
      return `(-${a[0]})`;
    case 'Multiply':
    case 'InvisibleOperator':
      return `(${a.join(' * ')})`;
    case 'Divide':
    case 'Rational':
      return `(${a[0]} / ${a[1]})`;
    case 'Power':
      return `(${a[0]} ** ${a[1]})`;
    case 'Square':
      return `(${a[0]} ** 2)`;
    case 'Root':
      return `real_root(${a[0]}, ${a[1]})`;
    case 'Lb':
      return `log(${a[0]}, 2)`;
    case 'Lg':
      return `log(${a[0]}, 10)`;
    case 'Log':
      return a.length > 1 ? `log(${a[0]}, ${a[1]})` : `log(${a[0]}, 10)`;
    case 'Delimiter':
      if (a.length === 1) return `(${a[0]})`;
      break;
    case 'Subscript':
      return symbol(JSON.stringify(j), opts);
    default:
      if (typeof head === 'string' && head in FUNCS) return `${FUNCS[head]}(${a.join(', ')})`;
  }
  throw new GraderError('unsupported', `no sympy form for ${typeof head === 'string' ? head : JSON.stringify(head)}`);
}
