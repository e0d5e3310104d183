import { evaluateComplex, isComplexConstant } from './complex.evaluator';
import { approximateDecimal, decimalLiteral } from './decimal.approximation';
import { GraderError } from './errors';
import { compareComplexValues, compareExpressions, compareValues, sampleEnvs, type Equality } from './expression.compare';
import { evaluate, freeVariables, parseLatex, type MathJson, type Value } from './expression.evaluator';
import { evaluateMatrixExpression, type MatrixValue } from './matrix.evaluator';
import type { AnswerNode } from './answer.parser';
import type { ProblemHints } from './problem.hints';

/** What a comparison knows besides the two answers: percent flags (rule 5), the problem's hints, renames. */
export interface CompareContext {
  predPercent: boolean;
  goldPercent: boolean;
  /** Problem-aware mode: what the problem says about the answer's form. */
  hints?: ProblemHints;
  /** Bound variables of the prediction renamed to the gold's (`f(t) = ..` against `f(x) = ..`). */
  rename?: ReadonlyMap<string, string>;
  /**
   * The whole-answer comparison (answer.compare.ts's `compareNodes`, which sets it), for the relation
   * rules that compare the parts of an answer: passed here so relation.compare.ts does not import
   * answer.compare.ts (which imports it).
   */
  compareNodes?: NodeCompare;
}

/** The outcome of comparing two parsed answers, with the rule that decided it. */
export interface NodeComparison {
  equality: Equality;
  rule: string;
  /** The forms the deciding rule compared when they are not the parsed answers (a chain's value, ...). */
  pred?: AnswerNode;
  gold?: AnswerNode;
}

/** Compares two parsed answers (the signature of answer.compare.ts's `compareNodes`). */
export type NodeCompare = (pred: AnswerNode, gold: AnswerNode, ctx: CompareContext) => NodeComparison;

/** Both parts equal: `different` wins over `unknown`, which wins over `equal`. */
export function both(a: Equality, b: Equality): Equality {
  if (a === 'different' || b === 'different') return 'different';
  return a === 'unknown' || b === 'unknown' ? 'unknown' : 'equal';
}

/** A comparison's outcome and the name of the rule that decided it. */
export interface LeafComparison {
  equality: Equality;
  rule: string;
}

/** Prepares a normalised leaf for the LaTeX parser: mixed numbers, `j` as the imaginary unit. */
export function leafLatex(latex: string): string {
  let s = latex.trim();
  const mixed = /^([+-]?)(\d+)\s*\\frac\s*\{?(\d+)\}?\s*\{?(\d+)\}?$/.exec(s) ?? /^([+-]?)(\d+)\s+(\d+)\s*\/\s*(\d+)$/.exec(s);
  if (mixed) {
    const [, sign, w, n, d] = mixed;
    s = `${sign}\\frac{${BigInt(w) * BigInt(d) + BigInt(n)}}{${d}}`;
  }
  if (/(^|[^a-zA-Z\\])j($|[^a-zA-Z])/.test(s) && !/(^|[^a-zA-Z\\])i($|[^a-zA-Z])/.test(s) && /\d\s*j|j\s*\d|^[+-]?j$/.test(s)) {
    s = s.replace(/(^|[^a-zA-Z\\])j(?=$|[^a-zA-Z])/g, '$1i');
  }
  return s;
}

/** Non-integer decimal literal in the text: an approximation (rule 6). */
export function hasDecimal(latex: string): boolean {
  return /(^|[^\d])\.\d|\d\.\d/.test(latex);
}

/**
 * Rule 5: the readings under which two values may be equal. Always as written (`28%` = `28%`, `28` = `28%`);
 * a one-sided `%` may also be read as a fraction (`0.28` = `28%`, `15%` = `0.15`). A bare gold `28` is
 * never `0.28`.
 */
export function percentPairs<T>(p: T, g: T, ctx: { predPercent: boolean; goldPercent: boolean }, hundredth: (x: T) => T): [T, T][] {
  const pairs: [T, T][] = [[p, g]];
  if (ctx.predPercent && !ctx.goldPercent) pairs.push([hundredth(p), g]);
  if (ctx.goldPercent && !ctx.predPercent) pairs.push([p, hundredth(g)]);
  return pairs;
}

function renameSymbols(j: MathJson, map: ReadonlyMap<string, string>): MathJson {
  if (typeof j === 'string') return map.get(j) ?? j;
  if (Array.isArray(j)) return j.map((x) => renameSymbols(x, map));
  if (typeof j === 'object' && 'sym' in j) return { sym: map.get(j.sym) ?? j.sym };
  return j;
}

/** The MathJSON of a normalised leaf (cached by the parser); throws `GraderError('unparseable')`. */
export function parsedLeaf(latex: string, rename?: ReadonlyMap<string, string>): MathJson {
  const j = parseLatex(leafLatex(latex));
  return rename && rename.size > 0 ? renameSymbols(j, rename) : j;
}

function tryEvaluate(j: MathJson): Value | null {
  try {
    return evaluate(j);
  } catch (e) {
    if (e instanceof GraderError && e.code !== 'refused_huge') return null;
    throw e;
  }
}

/** Rules `rounding`, `approximate`, `significant_digits` (decimal.approximation.ts) for a decimal prediction. */
function decimalRule(pred: string, gold: string, g: MathJson, ctx: CompareContext): LeafComparison | null {
  const lit = decimalLiteral(pred);
  if (!lit || ctx.predPercent !== ctx.goldPercent) return null;
  const gv = tryEvaluate(g);
  if (!gv || (gv.exact && gv.exact.equals(lit.value))) return null;
  const r = approximateDecimal(lit, gv, decimalLiteral(gold), ctx.hints);
  return r ? { equality: r.equal ? 'equal' : 'different', rule: r.rule } : null;
}

function sameMatrix(p: MatrixValue, g: MatrixValue, cmp: (a: Value, b: Value) => Equality): Equality {
  if (p.kind !== g.kind) return 'different';
  if (p.kind === 'scalar') return cmp(p.v, (g as { v: Value }).v);
  const gr = (g as { rows: Value[][] }).rows;
  if (p.rows.length !== gr.length || p.rows.some((r, i) => r.length !== gr[i].length)) return 'different';
  let out: Equality = 'equal';
  p.rows.forEach((r, i) =>
    r.forEach((x, k) => {
      const e = cmp(x, gr[i][k]);
      if (e === 'different') out = 'different';
      else if (e === 'unknown' && out === 'equal') out = 'unknown';
    }),
  );
  return out;
}

/** Rule `matrix_expression`: both sides evaluated as matrix expressions, entry by entry. */
function matrixExpressionRule(pred: string, gold: string, p: MathJson, g: MathJson): Equality {
  const vars = freeVariables(p);
  freeVariables(g, vars);
  const opts = { predHasDecimal: hasDecimal(pred), goldHasDecimal: hasDecimal(gold) };
  if (vars.size === 0) return sameMatrix(evaluateMatrixExpression(p), evaluateMatrixExpression(g), (a, b) => compareValues(a, b, opts));
  let defined = 0;
  for (const env of sampleEnvs(vars)) {
    const r = sameMatrix(evaluateMatrixExpression(p, env), evaluateMatrixExpression(g, env), (a, b) => {
      if (!Number.isFinite(a.approx) || !Number.isFinite(b.approx)) return 'unknown';
      return Math.abs(a.approx - b.approx) <= 1e-8 * Math.max(1, Math.abs(a.approx), Math.abs(b.approx)) ? 'equal' : 'different';
    });
    if (r === 'different') return 'different';
    if (r === 'equal') defined++;
  }
  return defined >= 3 ? 'equal' : 'unknown';
}

/**
 * Equality of two expression leaves (docs/design/grading.md rules 3, 5, 6 and the decimal, complex and matrix rules of
 * GRADING-RULES.md). Lets `GraderError` (unparseable, refused) propagate so the caller can fail closed
 * or offload the check.
 */
export function compareLeaves(pred: string, gold: string, ctx: CompareContext): LeafComparison {
  const p = parsedLeaf(pred, ctx.rename);
  const g = parsedLeaf(gold);
  const vars = freeVariables(p);
  freeVariables(g, vars);
  const baseRule = ctx.predPercent || ctx.goldPercent ? 'percent' : vars.size === 0 ? 'numeric' : 'symbolic';
  if (/\\begin\{/.test(pred) || /\\begin\{/.test(gold)) return { equality: matrixExpressionRule(pred, gold, p, g), rule: 'matrix_expression' };
  if (vars.size === 0) {
    const d = decimalRule(pred, gold, g, ctx);
    if (d) return d;
  }
  const predHasDecimal = hasDecimal(pred);
  const goldHasDecimal = hasDecimal(gold);
  let sawUnknown = false;
  for (const [pv, gv] of percentPairs<MathJson>(p, g, ctx, (x) => ['Divide', x, 100])) {
    const r = compareExpressions(pv, gv, { predHasDecimal, goldHasDecimal });
    if (r === 'equal') return { equality: 'equal', rule: baseRule };
    if (r === 'unknown') sawUnknown = true;
  }
  if (isComplexConstant(vars)) {
    try {
      const c = compareComplexValues(evaluateComplex(p), evaluateComplex(g), { predHasDecimal, goldHasDecimal });
      if (c !== 'different' || !sawUnknown) return { equality: c, rule: 'complex' };
    } catch (e) {
      if (!(e instanceof GraderError)) throw e;
    }
  }
  return { equality: sawUnknown ? 'unknown' : 'different', rule: baseRule };
}
