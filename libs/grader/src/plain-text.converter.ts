/**
 * Plain-text answers (what datasets and Python tools write: `1/sqrt(2)`, `x**2 + 1`, `3*pi/4`, `exp(2)`,
 * `oo`, `2*I`) converted to LaTeX, so a gold in plain text is graded like its LaTeX form (rule
 * `plain_text` in GRADING-RULES.md). A small precedence-climbing parser over Python/sympy syntax;
 * anything it does not recognise makes {@link plainTextToLatex} return null and the text is read as LaTeX.
 */
import { GraderError } from './errors';

type Node =
  | { t: 'num'; v: string }
  | { t: 'id'; v: string }
  | { t: 'call'; f: string; args: Node[] }
  | { t: 'bin'; op: string; a: Node; b: Node }
  | { t: 'neg'; a: Node }
  | { t: 'fact'; a: Node }
  | { t: 'group'; open: string; close: string; items: Node[] }
  | { t: 'rel'; op: string; a: Node; b: Node };

/** Text the plain-text parser cannot read; caught inside this file (the converter then answers null). */
class PlainTextSyntaxError extends GraderError {
  constructor(message: string) {
    super('unparseable', message);
  }
}

const TOKEN = /\s*(?:(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z_0-9]*)|(\*\*|<=|>=|!=|==|[-+*/^(),[\]{}!<>=%]))/y;

function tokenize(s: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  let i = 0;
  while (i < s.length) {
    if (/^\s*$/.test(s.slice(i))) break;
    TOKEN.lastIndex = i;
    const m = TOKEN.exec(s);
    if (!m) throw new PlainTextSyntaxError(`unexpected character at ${i}`);
    out.push(m[1] ?? m[2] ?? m[3]);
    i = TOKEN.lastIndex;
  }
  return out;
}

const BINARY: Record<string, { prec: number; right: boolean }> = {
  '+': { prec: 1, right: false },
  '-': { prec: 1, right: false },
  '*': { prec: 2, right: false },
  '/': { prec: 2, right: false },
  '%': { prec: 2, right: false },
  '**': { prec: 4, right: true },
  '^': { prec: 4, right: true },
};
const RELATIONS = new Set(['=', '==', '<', '>', '<=', '>=', '!=']);

class Parser {
  private k = 0;
  constructor(private readonly toks: string[]) {}

  parseTop(): Node {
    const items = this.commaList([]);
    if (this.k < this.toks.length) throw new PlainTextSyntaxError(`unexpected "${this.toks[this.k]}"`);
    return items.length === 1 ? items[0] : { t: 'group', open: '', close: '', items };
  }

  private peek(): string | undefined {
    return this.toks[this.k];
  }

  private take(expected?: string): string {
    const t = this.toks[this.k];
    if (t === undefined || (expected !== undefined && t !== expected)) throw new PlainTextSyntaxError(`expected ${expected ?? 'more input'}`);
    this.k++;
    return t;
  }

  private commaList(closers: string[]): Node[] {
    const items: Node[] = [];
    if (closers.includes(this.peek() ?? '')) return items;
    items.push(this.relation());
    while (this.peek() === ',') {
      this.k++;
      if (closers.includes(this.peek() ?? '')) break;
      items.push(this.relation());
    }
    return items;
  }

  private relation(): Node {
    let a = this.expr(0);
    while (RELATIONS.has(this.peek() ?? '')) {
      const op = this.take();
      const b = this.expr(0);
      a = { t: 'rel', op, a, b };
    }
    return a;
  }

  private expr(minPrec: number): Node {
    let a = this.unary();
    for (;;) {
      const op = this.peek();
      if (op === undefined) break;
      const info = BINARY[op];
      // Juxtaposition (`2pi`, `3x`, `2(x+1)`) multiplies, as in the sources' plain text.
      const implicit = !info && /^[A-Za-z_(\d.]/.test(op) && minPrec <= 2;
      if (implicit) {
        const b = this.expr(3);
        // `15 apples`, `The answer is 12`: words beside a value are prose, not a product of names.
        if (isWord(a) || isWord(b)) throw new PlainTextSyntaxError('words');
        a = { t: 'bin', op: '*', a, b };
        continue;
      }
      if (!info || info.prec < minPrec) break;
      this.k++;
      const b = this.expr(info.right ? info.prec : info.prec + 1);
      a = { t: 'bin', op: op === '^' ? '**' : op, a, b };
    }
    return a;
  }

  private unary(): Node {
    const t = this.peek();
    if (t === '-' || t === '+') {
      this.k++;
      // Python: -x**2 = -(x**2); the operand binds tighter than unary minus only for powers.
      const a = this.expr(3);
      return t === '-' ? { t: 'neg', a } : a;
    }
    return this.postfix(this.atom());
  }

  private postfix(a: Node): Node {
    while (this.peek() === '!') {
      this.k++;
      a = { t: 'fact', a };
    }
    return a;
  }

  private atom(): Node {
    const t = this.take();
    if (/^[\d.]/.test(t)) return { t: 'num', v: t };
    if (/^[A-Za-z_]/.test(t)) {
      if (this.peek() === '(') {
        this.k++;
        const args = this.commaList([')']);
        this.take(')');
        return { t: 'call', f: t, args };
      }
      return { t: 'id', v: t };
    }
    const close = t === '(' ? ')' : t === '[' ? ']' : t === '{' ? '}' : null;
    if (close) {
      const items = this.commaList([close]);
      this.take(close);
      if (t === '(' && items.length === 1) return { t: 'group', open: '(', close: ')', items };
      return { t: 'group', open: t, close, items };
    }
    throw new PlainTextSyntaxError(`unexpected "${t}"`);
  }
}

const GREEK = new Set(['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'theta', 'lambda', 'mu', 'sigma', 'phi', 'omega', 'tau', 'rho', 'psi', 'eta', 'kappa', 'nu', 'xi', 'zeta', 'chi']);
const TRIG = new Set(['sin', 'cos', 'tan', 'sec', 'csc', 'cot', 'sinh', 'cosh', 'tanh', 'arcsin', 'arccos', 'arctan']);
const ARC: Record<string, string> = { asin: 'arcsin', acos: 'arccos', atan: 'arctan' };

/** A name of three or more letters that is not a constant or a Greek letter: an English word. */
function isWord(n: Node): boolean {
  return n.t === 'id' && /^[A-Za-z]{3,}$/.test(n.v) && !GREEK.has(n.v) && !['pi', 'Pi', 'inf', 'infinity', 'Infinity'].includes(n.v);
}

function idLatex(v: string): string {
  if (v === 'pi' || v === 'Pi') return '\\pi';
  if (v === 'oo' || v === 'inf' || v === 'infinity' || v === 'Infinity') return '\\infty';
  if (v === 'E') return 'e';
  if (v === 'I') return 'i';
  if (GREEK.has(v)) return `\\${v}`;
  const sub = /^([A-Za-z])_?(\d+)$/.exec(v);
  if (sub) return `${sub[1]}_{${sub[2]}}`;
  if (/^[A-Za-z]$/.test(v)) return v;
  return `\\text{${v}}`;
}

function wrap(n: Node): string {
  const s = toLatex(n);
  return n.t === 'num' || n.t === 'id' || n.t === 'call' || n.t === 'group' || n.t === 'fact' ? s : `\\left(${s}\\right)`;
}

function toLatex(n: Node): string {
  switch (n.t) {
    case 'num':
      return n.v.replace(/^\./, '0.').replace(/\.$/, '');
    case 'id':
      return idLatex(n.v);
    case 'neg':
      return `-${n.a.t === 'bin' && (n.a.op === '+' || n.a.op === '-') ? `\\left(${toLatex(n.a)}\\right)` : toLatex(n.a)}`;
    case 'fact':
      return `${wrap(n.a)}!`;
    case 'rel': {
      const op = { '=': '=', '==': '=', '<': '<', '>': '>', '<=': '\\leq', '>=': '\\geq', '!=': '\\neq' }[n.op];
      return `${toLatex(n.a)} ${op} ${toLatex(n.b)}`;
    }
    case 'group': {
      const inner = n.items.map(toLatex).join(', ');
      if (n.open === '') return inner;
      if (n.open === '{') return `\\{${inner}\\}`;
      return `${n.open === '(' && n.items.length === 1 ? '\\left(' : n.open}${inner}${n.close === ')' && n.items.length === 1 ? '\\right)' : n.close}`;
    }
    case 'bin': {
      if (n.op === '/') return `\\frac{${toLatex(n.a)}}{${toLatex(n.b)}}`;
      if (n.op === '**') return `{${wrap(n.a)}}^{${toLatex(n.b)}}`;
      if (n.op === '*') return `${wrap(n.a)} \\cdot ${wrap(n.b)}`;
      if (n.op === '%') throw new PlainTextSyntaxError('modulo');
      const b = n.op === '-' && n.b.t === 'bin' && (n.b.op === '+' || n.b.op === '-') ? `\\left(${toLatex(n.b)}\\right)` : toLatex(n.b);
      return `${toLatex(n.a)} ${n.op} ${b}`;
    }
    case 'call':
      return callLatex(n.f, n.args);
  }
}

function callLatex(fRaw: string, args: Node[]): string {
  const f = ARC[fRaw] ?? fRaw;
  const a = args.map(toLatex);
  const one = (): string => {
    if (a.length !== 1) throw new PlainTextSyntaxError(`${f} takes one argument`);
    return a[0];
  };
  if (f === 'sqrt') return `\\sqrt{${one()}}`;
  if (f === 'cbrt') return `\\sqrt[3]{${one()}}`;
  if (f === 'root' && a.length === 2) return `\\sqrt[${a[1]}]{${a[0]}}`;
  if (f === 'exp') return `e^{${one()}}`;
  // Python and sympy: log is the natural logarithm; log(x, b) has base b.
  if (f === 'log' || f === 'ln') return a.length === 2 ? `\\log_{${a[1]}}\\left(${a[0]}\\right)` : `\\ln\\left(${one()}\\right)`;
  if (f === 'log10') return `\\log_{10}\\left(${one()}\\right)`;
  if (f === 'log2') return `\\log_{2}\\left(${one()}\\right)`;
  if (TRIG.has(f)) return `\\${f}\\left(${one()}\\right)`;
  if (f === 'abs' || f === 'Abs') return `\\left|${one()}\\right|`;
  if (f === 'factorial') return `${wrap(args[0])}!`;
  if ((f === 'binomial' || f === 'binom') && a.length === 2) return `\\binom{${a[0]}}{${a[1]}}`;
  if (f === 'Rational' && a.length === 2) return `\\frac{${a[0]}}{${a[1]}}`;
  if ((f === 'Integer' || f === 'Float' || f === 'S') && a.length === 1) return a[0];
  if (/^[A-Za-z]$/.test(f)) return `${f}\\left(${a.join(', ')}\\right)`;
  throw new PlainTextSyntaxError(`unknown function ${f}`);
}

/** Words or operators only plain text uses; LaTeX never writes them. */
const PLAIN_MARKERS = /\*|\b(?:sqrt|cbrt|exp|log|log10|log2|ln|abs|Abs|pi|oo|factorial|binomial|Rational|asin|acos|atan|sin|cos|tan)\b|\^\d{2,}|\^\(/;

/**
 * The LaTeX form of a plain-text (Python/sympy style) answer, or null when `text` is not one: it has a
 * backslash or `$`, none of the plain-text markers (`*`, `**`, `sqrt(`, `pi`, `oo`, `exp(`, ...), or does
 * not parse. `log` is the natural logarithm (as in Python and sympy). Pure; linear in the input.
 */
export function plainTextToLatex(text: string): string | null {
  const s = text.trim();
  if (!s || s.length > 500 || /[\\$&]/.test(s) || !PLAIN_MARKERS.test(s)) return null;
  return plainExpressionToLatex(s);
}

/** Like {@link plainTextToLatex} for text known to be a plain-text expression (no marker needed). */
export function plainExpressionToLatex(text: string): string | null {
  const s = text.trim();
  if (!s || s.length > 500 || /[\\$&]/.test(s)) return null;
  try {
    return toLatex(new Parser(tokenize(s)).parseTop());
  } catch (e) {
    if (e instanceof PlainTextSyntaxError) return null;
    throw e;
  }
}
