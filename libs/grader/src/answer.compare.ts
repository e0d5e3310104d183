import type { AnswerNode } from './answer.parser';
import { compareEquations, compareExpressions, type Equality } from './expression.compare';
import { freeVariables, parseLatex, type MathJson } from './expression.evaluator';

/** The outcome of comparing two parsed answers, with the rule that decided it. */
export interface NodeComparison {
  equality: Equality;
  rule: string;
}

/** Flags of the top-level answers (rule 5). */
export interface CompareContext {
  predPercent: boolean;
  goldPercent: boolean;
}

const NO_FLAGS: CompareContext = { predPercent: false, goldPercent: false };

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
export function percentPairs<T>(p: T, g: T, ctx: CompareContext, hundredth: (x: T) => T): [T, T][] {
  const pairs: [T, T][] = [[p, g]];
  if (ctx.predPercent && !ctx.goldPercent) pairs.push([hundredth(p), g]);
  if (ctx.goldPercent && !ctx.predPercent) pairs.push([p, hundredth(g)]);
  return pairs;
}

const parsed = (latex: string): MathJson => parseLatex(leafLatex(latex));

function exprEquality(pred: string, gold: string, ctx: CompareContext): Equality {
  const p = parsed(pred);
  const g = parsed(gold);
  const predHasDecimal = hasDecimal(pred);
  const goldHasDecimal = hasDecimal(gold);
  let sawUnknown = false;
  for (const [pv, gv] of percentPairs<MathJson>(p, g, ctx, (x) => ['Divide', x, 100])) {
    const r = compareExpressions(pv, gv, { predHasDecimal, goldHasDecimal });
    if (r === 'equal') return 'equal';
    if (r === 'unknown') sawUnknown = true;
  }
  return sawUnknown ? 'unknown' : 'different';
}

const LABEL = /^(?:[a-zA-Z](?:_\{?[\w,]+\}?)?'*|\|[a-zA-Z ]+\||[a-zA-Z]{1,3}|[fghFGHPQ]\([^()]*\)|\\angle\s*[A-Z]+|m\s*\\angle\s*[A-Z]+|\\[a-zA-Z]+(?:_\{?\w+\}?)?)$/;

/** A left-hand side that only names the answer (`x`, `|AB|`, `f(2)`, `(p,q)`): rule 8. */
function isLabel(n: AnswerNode): boolean {
  if (n.kind === 'expr') return LABEL.test(n.latex.trim()) && !/^\\(?:pi|infty|sqrt|frac)/.test(n.latex.trim());
  if (n.kind === 'tuple') return n.items.every(isLabel);
  if (n.kind === 'choice') return true;
  return false;
}

/** `x = v` / `x \approx v` / `x = a = v` with a label on the left -> `v`. */
function labelledValue(n: AnswerNode): AnswerNode | null {
  if (n.kind !== 'relation') return null;
  if (!n.ops.every((o) => o === '=' || o === '\\approx')) return null;
  if (!isLabel(n.sides[0])) return null;
  return n.sides[n.sides.length - 1];
}

interface Interval {
  lo: AnswerNode;
  hi: AnswerNode;
  loClosed: boolean;
  hiClosed: boolean;
}
type SetPart = Interval | { point: AnswerNode };

const INF: AnswerNode = { kind: 'expr', latex: '\\infty' };
const NEG_INF: AnswerNode = { kind: 'expr', latex: '-\\infty' };

function isConstant(n: AnswerNode): boolean {
  if (n.kind !== 'expr') return false;
  try {
    return freeVariables(parsed(n.latex)).size === 0;
  } catch {
    return false;
  }
}

function bareVariable(n: AnswerNode): string | null {
  return n.kind === 'expr' && /^[a-zA-Z]$/.test(n.latex.trim()) ? n.latex.trim() : null;
}

function absVariable(n: AnswerNode): string | null {
  const m = n.kind === 'expr' ? /^\|\s*([a-zA-Z])\s*\|$/.exec(n.latex.trim()) : null;
  return m ? m[1] : null;
}

/** A one-variable solved inequality, an interval, a union or a finite set as parts of the real line (rules 7, 8). */
function toSetParts(n: AnswerNode): SetPart[] | null {
  switch (n.kind) {
    case 'reals':
      return [{ lo: NEG_INF, hi: INF, loClosed: false, hiClosed: false }];
    case 'empty':
      return [];
    case 'tuple':
      if (n.items.length !== 2) return null;
      return [{ lo: n.items[0], hi: n.items[1], loClosed: n.open === '[', hiClosed: n.close === ']' }];
    case 'union': {
      const parts = n.parts.map(toSetParts);
      return parts.some((p) => p === null) ? null : (parts as SetPart[][]).flat();
    }
    case 'list':
      return n.braces ? n.items.map((point) => ({ point })) : null;
    case 'relation':
      return relationToSetParts(n);
    default:
      return null;
  }
}

function relationToSetParts(n: Extract<AnswerNode, { kind: 'relation' }>): SetPart[] | null {
  if (n.ops.length === 1 && n.ops[0] === '\\in' && bareVariable(n.sides[0])) return toSetParts(n.sides[1]);
  const up = n.ops.every((o) => o === '<' || o === '\\leq');
  const down = n.ops.every((o) => o === '>' || o === '\\geq');
  if (!up && !down) return null;
  const sides = up ? n.sides : [...n.sides].reverse();
  const ops = (up ? n.ops : [...n.ops].reverse()).map((o) => o === '<' || o === '>' ? 'lt' : 'le');
  if (sides.length === 2) {
    if (bareVariable(sides[0]) && isConstant(sides[1])) return [{ lo: NEG_INF, hi: sides[1], loClosed: false, hiClosed: ops[0] === 'le' }];
    if (bareVariable(sides[1]) && isConstant(sides[0])) return [{ lo: sides[0], hi: INF, loClosed: ops[0] === 'le', hiClosed: false }];
    return null;
  }
  if (sides.length === 3 && isConstant(sides[0]) && isConstant(sides[2])) {
    const loClosed = ops[0] === 'le';
    const hiClosed = ops[1] === 'le';
    if (bareVariable(sides[1])) return [{ lo: sides[0], hi: sides[2], loClosed, hiClosed }];
    if (absVariable(sides[1]) && sides[0].kind === 'expr' && sides[2].kind === 'expr') {
      // a <= |x| <= b  <=>  x in [-b, -a] U [a, b]   (a >= 0)
      const neg = (e: AnswerNode): AnswerNode => ({ kind: 'expr', latex: `-(${(e as { latex: string }).latex})` });
      return [
        { lo: neg(sides[2]), hi: neg(sides[0]), loClosed: hiClosed, hiClosed: loClosed },
        { lo: sides[0], hi: sides[2], loClosed, hiClosed },
      ];
    }
  }
  return null;
}

function comparePart(p: SetPart, g: SetPart): Equality {
  if ('point' in p || 'point' in g) {
    if ('point' in p && 'point' in g) return compareNodes(p.point, g.point, NO_FLAGS).equality;
    return 'different';
  }
  if (p.loClosed !== g.loClosed || p.hiClosed !== g.hiClosed) return 'different';
  return both(compareNodes(p.lo, g.lo, NO_FLAGS).equality, compareNodes(p.hi, g.hi, NO_FLAGS).equality);
}

function both(a: Equality, b: Equality): Equality {
  if (a === 'different' || b === 'different') return 'different';
  return a === 'unknown' || b === 'unknown' ? 'unknown' : 'equal';
}

/** Unordered matching of two collections (greedy; each gold item used once). */
function matchUnordered<T>(preds: T[], golds: T[], eq: (p: T, g: T) => Equality): Equality {
  if (preds.length !== golds.length) return 'different';
  const used = new Set<number>();
  let unknown = false;
  for (const p of preds) {
    let found = -1;
    for (let k = 0; k < golds.length && found < 0; k++) {
      if (used.has(k)) continue;
      const r = eq(p, golds[k]);
      if (r === 'equal') found = k;
      else if (r === 'unknown') unknown = true;
    }
    if (found < 0) return unknown ? 'unknown' : 'different';
    used.add(found);
  }
  return 'equal';
}

function matchOrdered(preds: AnswerNode[], golds: AnswerNode[]): Equality {
  if (preds.length !== golds.length) return 'different';
  return preds.reduce<Equality>((acc, p, i) => both(acc, compareNodes(p, golds[i], NO_FLAGS).equality), 'equal');
}

function flatten(n: AnswerNode): AnswerNode[] {
  if (n.kind === 'list') return n.items.flatMap(flatten);
  const v = labelledValue(n);
  return [v ?? n];
}

function scaledMatrix(n: Extract<AnswerNode, { kind: 'matrix' }>): AnswerNode[][] {
  if (!n.scale) return n.rows;
  return n.rows.map((r) =>
    r.map((c) => (c.kind === 'expr' ? { kind: 'expr', latex: `(${n.scale})\\cdot(${c.latex})` } : c)),
  );
}

function oriented(n: Extract<AnswerNode, { kind: 'relation' }>): { op: string; sides: AnswerNode[] } | null {
  if (n.sides.length !== 2) return null;
  const op = n.ops[0];
  if (op === '>') return { op: '<', sides: [n.sides[1], n.sides[0]] };
  if (op === '\\geq') return { op: '\\leq', sides: [n.sides[1], n.sides[0]] };
  return { op, sides: n.sides };
}

function leafJson(n: AnswerNode): MathJson | null {
  return n.kind === 'expr' ? parsed(n.latex) : null;
}

function compareRelations(p: Extract<AnswerNode, { kind: 'relation' }>, g: Extract<AnswerNode, { kind: 'relation' }>): NodeComparison {
  const pi = toSetParts(p);
  const gi = toSetParts(g);
  if (pi && gi) return { equality: matchUnordered(pi, gi, comparePart), rule: 'inequality' };
  const po = oriented(p);
  const go = oriented(g);
  if (!po || !go) return { equality: 'unknown', rule: 'relation' };
  if (po.op === '=' && go.op === '=') {
    const pl = leafJson(po.sides[0]);
    const pr = leafJson(po.sides[1]);
    const gl = leafJson(go.sides[0]);
    const gr = leafJson(go.sides[1]);
    if (pl !== null && pr !== null && gl !== null && gr !== null) return { equality: compareEquations([pl, pr], [gl, gr]), rule: 'equation' };
    return { equality: matchOrdered(po.sides, go.sides), rule: 'equation' };
  }
  if (po.op !== go.op) return { equality: 'different', rule: 'relation' };
  const direct = matchOrdered(po.sides, go.sides);
  if (direct === 'equal' || (po.op !== '\\neq' && po.op !== '=')) return { equality: direct, rule: 'relation' };
  return { equality: matchOrdered(po.sides, [go.sides[1], go.sides[0]]), rule: 'relation' };
}

/**
 * Compares a parsed prediction with a parsed gold answer (GRADING rules 3-9). Returns `unknown` when the
 * fast path cannot decide; never throws for a structural mismatch (that is `different`), but lets
 * `GraderError` (unparseable, refused) propagate so the caller can fail closed or offload.
 */
export function compareNodes(pred: AnswerNode, gold: AnswerNode, ctx: CompareContext = NO_FLAGS): NodeComparison {
  // A labelled gold `x = v` accepts `v` and `y = v`; a labelled prediction answers with its value.
  const gv = labelledValue(gold);
  const pv = labelledValue(pred);
  if (gv || pv) {
    if (gv && pv) return compareNodes(pv, gv, ctx);
    if (gv && pred.kind !== 'relation') return compareNodes(pred, gv, ctx);
    if (pv && gold.kind !== 'relation') return compareNodes(pv, gold, ctx);
  }
  if (gold.kind === 'relation' && pred.kind === 'relation') return compareRelations(pred, gold);

  const gSet = toSetParts(gold);
  const pSet = toSetParts(pred);
  const intervalish = (n: AnswerNode) =>
    n.kind === 'union' || n.kind === 'reals' || n.kind === 'empty' || n.kind === 'relation' ||
    (n.kind === 'tuple' && (n.open === '[' || n.close === ']' || n.items.some((i) => i.kind === 'expr' && /\\infty/.test(i.latex))));
  if (gSet && pSet && (intervalish(gold) || intervalish(pred))) {
    return { equality: matchUnordered(pSet, gSet, comparePart), rule: 'interval' };
  }
  if (gold.kind === 'relation' || pred.kind === 'relation') return { equality: 'different', rule: 'relation' };

  if (gold.kind === 'list' || pred.kind === 'list') {
    const ps = flatten(pred);
    const gs = flatten(gold);
    if (gs.length === 1 && ps.length > 1) return { equality: 'different', rule: 'hedged' };
    if (gold.kind === 'tuple' || pred.kind === 'tuple') return { equality: 'different', rule: 'structure' };
    return { equality: matchUnordered(ps, gs, (a, b) => compareNodes(a, b, NO_FLAGS).equality), rule: 'set' };
  }
  if (gold.kind === 'tuple' || pred.kind === 'tuple') {
    if (gold.kind !== 'tuple' || pred.kind !== 'tuple') return { equality: 'different', rule: 'structure' };
    if (gold.open !== pred.open || gold.close !== pred.close) return { equality: 'different', rule: 'tuple' };
    return { equality: matchOrdered(pred.items, gold.items), rule: 'tuple' };
  }
  if (gold.kind === 'matrix' || pred.kind === 'matrix') {
    if (gold.kind !== 'matrix' || pred.kind !== 'matrix') return { equality: 'different', rule: 'structure' };
    const pr = scaledMatrix(pred);
    const gr = scaledMatrix(gold);
    if (pr.length !== gr.length || pr.some((r, i) => r.length !== gr[i].length)) return { equality: 'different', rule: 'matrix_shape' };
    return { equality: matchOrdered(pr.flat(), gr.flat()), rule: 'matrix' };
  }
  if (gold.kind === 'choice') {
    if (pred.kind === 'choice') return { equality: pred.letter === gold.letter ? 'equal' : 'different', rule: 'choice' };
    if (pred.kind === 'expr' && /^[a-eA-E]$/.test(pred.latex.trim()))
      return { equality: pred.latex.trim().toUpperCase() === gold.letter ? 'equal' : 'different', rule: 'choice' };
    if (pred.kind === 'text') {
      const m = /^([a-e])\b/.exec(pred.words);
      return { equality: m && m[1].toUpperCase() === gold.letter ? 'equal' : 'different', rule: 'choice' };
    }
    return { equality: 'different', rule: 'choice' };
  }
  if (gold.kind === 'text' || pred.kind === 'text') {
    if (gold.kind !== 'text' || pred.kind !== 'text') return { equality: 'different', rule: 'text' };
    return { equality: gold.words === pred.words ? 'equal' : 'different', rule: 'text' };
  }
  if (gold.kind === 'base' || pred.kind === 'base') {
    const digits = (n: AnswerNode) => (n.kind === 'base' ? n.digits : n.kind === 'expr' && /^\d+$/.test(n.latex) ? n.latex : null);
    const pd = digits(pred);
    const gd = digits(gold);
    const pb = pred.kind === 'base' ? pred.base : null;
    const gb = gold.kind === 'base' ? gold.base : null;
    const same = pd !== null && gd !== null && pd.replace(/^0+(?=.)/, '') === gd.replace(/^0+(?=.)/, '') && (pb === null || gb === null || pb === gb);
    return { equality: same ? 'equal' : 'different', rule: 'base' };
  }
  if (gold.kind === 'expr' && pred.kind === 'expr') {
    const r = exprEquality(pred.latex, gold.latex, ctx);
    const gj = parsed(gold.latex);
    const numeric = freeVariables(gj).size === 0 && freeVariables(parsed(pred.latex)).size === 0;
    return { equality: r, rule: ctx.predPercent || ctx.goldPercent ? 'percent' : numeric ? 'numeric' : 'symbolic' };
  }
  if (gold.kind !== pred.kind) return { equality: 'different', rule: 'structure' };
  return { equality: 'equal', rule: 'structure' };
}

