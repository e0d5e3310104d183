import type { AnswerNode } from './answer.parser';
import { GraderError } from './errors';
import { compareEquations, type Equality } from './expression.compare';
import { freeVariables, type MathJson } from './expression.evaluator';
import { both, hasDecimal, parsedLeaf, type CompareContext, type NodeCompare, type NodeComparison } from './leaf.compare';
import { decimalLiteral, roundDecimals, truncateDecimals } from './decimal.approximation';
import { restates } from './problem.hints';
import { evaluate } from './expression.evaluator';

type Relation = Extract<AnswerNode, { kind: 'relation' }>;

/**
 * A name standing for the answer (rule 8): `x`, `x_1`, `|AB|`, `AB`, `f(2)`, `f(t)`, `f^{-1}(x)`, `y'`,
 * `\angle ABC`, `\theta`, `[ABC]`, `\overline{AB}`.
 */
const LABEL =
  /^(?:[a-zA-Z](?:_\{?[\w,]+\}?)?'*|\|[a-zA-Z ]+\||[a-zA-Z]{1,3}|[fghFGHPQ]\([^()]*\)|[a-zA-Z](?:\^\{?-1\}?|')*\(\s*[a-zA-Z0-9]+(?:\s*,\s*[a-zA-Z0-9]+)*\s*\)|\\angle\s*[A-Z]+|m\s*\\angle\s*[A-Z]+|\\[a-zA-Z]+(?:_\{?\w+\}?)?|\\(?:overline|vec|hat|widehat|overrightarrow)\s*\{?[A-Za-z]+\}?|\[[A-Z]{2,}\])$/;

/** A side that only names the answer (`x`, `|AB|`, `f(2)`, `(p,q)`, `V_1 : V_2`, `\frac{V_1}{V_2}`). */
export function isLabel(n: AnswerNode): boolean {
  if (n.kind === 'expr') {
    const s = n.latex.trim();
    if (/^\\(?:pi|infty|sqrt|frac|emptyset)/.test(s)) {
      const frac = /^\\frac\{([^{}]+)\}\{([^{}]+)\}$/.exec(s);
      return !!frac && LABEL.test(frac[1].trim()) && LABEL.test(frac[2].trim());
    }
    return LABEL.test(s);
  }
  if (n.kind === 'text') return LABEL.test(n.raw.trim());
  if (n.kind === 'tuple') return n.items.every(isLabel);
  if (n.kind === 'ratio') return n.parts.every(isLabel);
  if (n.kind === 'choice') return true;
  return false;
}

/** The function argument names a label binds (`f(t)` -> [`t`]), for renaming. */
export function boundVariables(label: AnswerNode): { name: string; args: string[] } | null {
  if (label.kind !== 'expr') return null;
  const m = /^([a-zA-Z](?:\^\{?-1\}?|')*)\(\s*([a-zA-Z](?:\s*,\s*[a-zA-Z])*)\s*\)$/.exec(label.latex.trim());
  return m ? { name: m[1], args: m[2].split(',').map((a) => a.trim()) } : null;
}

export function isConstant(n: AnswerNode): boolean {
  if (n.kind === 'ratio') return n.parts.every(isConstant);
  if (n.kind !== 'expr') return false;
  try {
    return freeVariables(parsedLeaf(n.latex)).size === 0;
  } catch {
    return false;
  }
}

/** A decimal approximation agrees with a constant: the constant rounded or cut at the decimal's precision. */
function approximatelyEqual(a: AnswerNode, b: AnswerNode): boolean {
  const [approx, other] = a.kind === 'expr' && hasDecimal(a.latex) ? [a, b] : [b, a];
  if (approx.kind !== 'expr' || other.kind !== 'expr') return false;
  const lit = decimalLiteral(approx.latex);
  if (!lit) return false;
  try {
    const v = evaluate(parsedLeaf(other.latex));
    const g = v.exact ?? (Number.isFinite(v.approx) ? decimalLiteral(v.approx.toFixed(Math.min(20, lit.decimals + 6)))?.value : null);
    if (!g) return false;
    return roundDecimals(g, lit.decimals).equals(lit.value) || truncateDecimals(g, lit.decimals).equals(lit.value);
  } catch {
    return false;
  }
}

/** `12 x 5` -> `12 \times 5` in a leaf (the reading of `x` between numbers in a chain of values). */
function timesSign(n: AnswerNode): AnswerNode {
  if (n.kind !== 'expr' || !/\d\s+x\s+\d/.test(n.latex)) return n;
  return { kind: 'expr', latex: n.latex.replace(/(\d)\s+x\s+(?=\d)/g, '$1 \\times ') };
}

/** What a chain of `=` / `\approx` reduces to. */
export type ChainValue = { value: AnswerNode; label: AnswerNode | null; approximation?: AnswerNode } | 'inconsistent';

/**
 * Rule `chain` (and rule 8's labels): `x = a = v`, `20 + 25 + 70 = 115`, `\sqrt2 \approx 1.414`, `5 = x`.
 * A label may stand first (or last, for `v = x`); every other side must agree with the next (`=`: equal,
 * `\approx`: the decimal is the other side rounded or cut), else the chain offers different values and is
 * `inconsistent` (a hedge such as `x = 3 \quad x = 6`). Its value is the last side before the first
 * `\approx`; the last side of such a chain is kept as `approximation`. Null when the relation is not such a chain (an equation between expressions).
 */
export function chainValue(n: AnswerNode, ctx: CompareContext, restatedLabel = false): ChainValue | null {
  if (n.kind !== 'relation') return null;
  if (!n.ops.every((o) => o === '=' || o === '\\approx' || o === '\\equiv')) return null;
  let sides = n.sides;
  let ops = n.ops.map((o) => (o === '\\equiv' ? '=' : o));
  if (n.ops.includes('\\equiv')) {
    // `n \equiv 5 \pmod{17}`: the residue is the value; the modulus is not part of it.
    if (n.ops.length !== 1 || !isLabel(sides[0])) return null;
    const last = sides[1];
    if (last.kind !== 'expr') return null;
    const residue = last.latex.replace(/\s*(?:\\pmod\s*\{[^{}]*\}|\(\s*\\(?:bmod|mod)\s*[^()]*\)|\\(?:bmod|mod)\s*\S+)\s*$/, '').trim();
    if (!residue || residue === last.latex.trim()) return null;
    sides = [sides[0], { kind: 'expr', latex: residue }];
  }
  let label: AnswerNode | null = null;
  // With the problem, a side that restates what it asks for (`z^3 = -1` for "Find z^3") names the answer.
  const restatedSide = (s: AnswerNode) => restatedLabel && s.kind === 'expr' && restates(ctx.hints, s.latex);
  if (isLabel(sides[0]) || (sides.length === 2 && restatedSide(sides[0]) && isConstant(sides[1]))) {
    label = sides[0];
    sides = sides.slice(1);
    ops = ops.slice(1);
  } else if (sides.length === 2 && ops[0] === '=' && isLabel(sides[1]) && !isLabel(sides[0])) {
    label = sides[1];
    sides = [sides[0]];
    ops = [];
  } else if (!sides.every(isConstant)) {
    // `12 x 5 / 4 = 15`: between two numbers, with spaces, an `x` is a multiplication sign (in a chain only).
    const timesRead = sides.map(timesSign);
    if (timesRead.every((t, k) => t === sides[k]) || !timesRead.every(isConstant)) return null;
    sides = timesRead;
  }
  for (let k = 0; k < ops.length; k++) {
    const agree = ops[k] === '=' ? nodesOf(ctx)(sides[k], sides[k + 1], { predPercent: false, goldPercent: false, hints: ctx.hints, compareNodes: ctx.compareNodes }).equality === 'equal' : approximatelyEqual(sides[k], sides[k + 1]);
    if (!agree) return 'inconsistent';
  }
  const firstApprox = ops.indexOf('\\approx');
  // `\tan(\ldots) \approx -0.4118`: a side that restates the problem's expression is not an answer.
  const exact = firstApprox >= 0 ? sides[firstApprox] : sides[sides.length - 1];
  const value = firstApprox >= 0 && exact.kind === 'expr' && restates(ctx.hints, exact.latex) ? sides[sides.length - 1] : exact;
  // The checked decimal at the end (`\frac13 \approx 0.333`) answers a gold written as a decimal.
  return firstApprox >= 0 && value !== sides[sides.length - 1] ? { value, label, approximation: sides[sides.length - 1] } : { value, label };
}

/** `value` stands in `latex` as a whole token (`60` in `60 / 4`, not in `600`). */
function mentions(latex: string, value: string): boolean {
  const v = value.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return v.length > 0 && new RegExp(`(^|[^\\d.])${v}($|[^\\d.])`).test(latex);
}

/**
 * Rule `chain` for working written as several steps (`12 \times 5 = 60, 60 / 4 = 15`): every item is an
 * unnamed chain of values that holds, and each step starts from the value of the one before (it appears
 * in its first side). The value is the last step's. Null when the list is not such working (two results
 * side by side stay a hedge).
 */
export function workingValue(n: AnswerNode, ctx: CompareContext): AnswerNode | null {
  if (n.kind !== 'list' || n.braces || n.items.length < 2) return null;
  let previous: AnswerNode | null = null;
  for (const item of n.items) {
    if (item.kind !== 'relation' || !item.ops.includes('=') || item.sides[0].kind !== 'expr') return null;
    const c = chainValue(item, ctx);
    if (c === null || c === 'inconsistent' || c.label !== null) return null;
    if (previous !== null && (previous.kind !== 'expr' || !mentions(item.sides[0].latex, previous.latex))) return null;
    previous = item.sides[item.sides.length - 1];
  }
  return previous;
}

interface Interval {
  lo: AnswerNode;
  hi: AnswerNode;
  loClosed: boolean;
  hiClosed: boolean;
}
export type SetPart = Interval | { point: AnswerNode };

const INF: AnswerNode = { kind: 'expr', latex: '\\infty' };
const NEG_INF: AnswerNode = { kind: 'expr', latex: '-\\infty' };

function bareVariable(n: AnswerNode): string | null {
  return n.kind === 'expr' && /^[a-zA-Z]$/.test(n.latex.trim()) ? n.latex.trim() : null;
}

function negatedVariable(n: AnswerNode): string | null {
  const m = n.kind === 'expr' ? /^-\s*([a-zA-Z])$/.exec(n.latex.trim()) : null;
  return m ? m[1] : null;
}

function absVariable(n: AnswerNode): string | null {
  const m = n.kind === 'expr' ? /^\|\s*([a-zA-Z])\s*\|$/.exec(n.latex.trim()) : null;
  return m ? m[1] : null;
}

const FLIP: Record<string, string> = { '<': '>', '>': '<', '\\leq': '\\geq', '\\geq': '\\leq' };

/** `-x > -1` is `x < 1`: a relation in the negated variable, multiplied by -1 (rule `inequality`). */
function negateRelation(n: Relation): Relation | null {
  if (!n.sides.some((s) => negatedVariable(s)) || n.sides.some((s) => bareVariable(s)) || !n.ops.every((o) => o in FLIP)) return null;
  const sides = n.sides.map((s): AnswerNode => {
    const v = negatedVariable(s);
    if (v) return { kind: 'expr', latex: v };
    return s.kind === 'expr' ? { kind: 'expr', latex: `-(${s.latex})` } : s;
  });
  return { kind: 'relation', ops: n.ops.map((o) => FLIP[o]), sides };
}

/** A one-variable solved inequality, an interval, a union or a finite set as parts of the real line (rules 7, 8). */
export function toSetParts(n: AnswerNode): SetPart[] | null {
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

function relationToSetParts(n: Relation): SetPart[] | null {
  if (n.ops.length === 1 && n.ops[0] === '\\in' && bareVariable(n.sides[0])) return toSetParts(n.sides[1]);
  const negated = negateRelation(n);
  if (negated) return relationToSetParts(negated);
  // x != c: the real line without c.
  if (n.ops.length === 1 && n.ops[0] === '\\neq' && bareVariable(n.sides[0]) && isConstant(n.sides[1]))
    return [
      { lo: NEG_INF, hi: n.sides[1], loClosed: false, hiClosed: false },
      { lo: n.sides[1], hi: INF, loClosed: false, hiClosed: false },
    ];
  const up = n.ops.every((o) => o === '<' || o === '\\leq');
  const down = n.ops.every((o) => o === '>' || o === '\\geq');
  if (!up && !down) return null;
  const sides = up ? n.sides : [...n.sides].reverse();
  const ops = (up ? n.ops : [...n.ops].reverse()).map((o) => (o === '<' || o === '>' ? 'lt' : 'le'));
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

/** The whole-answer comparison the caller passed in the context (answer.compare.ts's `compareNodes` sets it). */
function nodesOf(ctx: CompareContext): NodeCompare {
  // A programmer error, not input: these rules are reached through compareNodes, which always sets it.
  if (!ctx.compareNodes) throw new GraderError('unsupported', 'relation rules compare parts through ctx.compareNodes; call them through compareNodes (answer.compare.ts)');
  return ctx.compareNodes;
}

export function comparePart(p: SetPart, g: SetPart, ctx: CompareContext): Equality {
  if ('point' in p || 'point' in g) {
    if ('point' in p && 'point' in g) return nodesOf(ctx)(p.point, g.point, ctx).equality;
    return 'different';
  }
  if (p.loClosed !== g.loClosed || p.hiClosed !== g.hiClosed) return 'different';
  return both(nodesOf(ctx)(p.lo, g.lo, ctx).equality, nodesOf(ctx)(p.hi, g.hi, ctx).equality);
}

/** Unordered matching of two collections (greedy; each gold item used once). */
export function matchUnordered<T>(preds: T[], golds: T[], eq: (p: T, g: T) => Equality): Equality {
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

export function matchOrdered(preds: AnswerNode[], golds: AnswerNode[], ctx: CompareContext): Equality {
  if (preds.length !== golds.length) return 'different';
  return preds.reduce<Equality>((acc, p, i) => both(acc, nodesOf(ctx)(p, golds[i], ctx).equality), 'equal');
}

/** The unknown a solved one-variable relation is about (`x` in `x < 4`, `-x > -1`, `1 \leq |x| \leq 2`, `x \in [1, 2]`). */
function solvedVariable(n: Relation): string | null {
  for (const s of n.sides) {
    const v = bareVariable(s) ?? negatedVariable(s) ?? absVariable(s);
    if (v) return v;
  }
  return null;
}

const ORDER_OPS = new Set(['<', '>', '\\leq', '\\geq', '=']);
const ASCENDING: Record<string, string> = { '>': '<', '\\geq': '\\leq', '=': '=' };

/** A chain of `<`, `\leq` (or of `>`, `\geq`) written in ascending order: `c > b > a` is `a < b < c`. */
function ascendingChain(n: Relation): { ops: string[]; sides: AnswerNode[] } | null {
  if (!n.ops.every((o) => ORDER_OPS.has(o))) return null;
  const descending = n.ops.some((o) => o === '>' || o === '\\geq');
  if (!descending) return { ops: n.ops, sides: n.sides };
  // A mixed chain (`a < b > c`) is compared as written.
  if (n.ops.some((o) => o === '<' || o === '\\leq')) return { ops: n.ops, sides: n.sides };
  return { ops: [...n.ops].reverse().map((o) => ASCENDING[o]), sides: [...n.sides].reverse() };
}

/**
 * Rule `relation` for chains of order relations between expressions (`g(3) < g(0) < g(5)`, an ordering
 * asked for): the same relations between the same sides in the same order, a chain read either way
 * (`g(5) > g(0) > g(3)`). Different when the relations or a side differ.
 */
function compareOrderChains(p: Relation, g: Relation, ctx: CompareContext): Equality {
  const pc = ascendingChain(p);
  const gc = ascendingChain(g);
  if (!pc || !gc) return 'unknown';
  if (pc.ops.length !== gc.ops.length || pc.ops.some((o, i) => o !== gc.ops[i])) return 'different';
  return matchOrdered(pc.sides, gc.sides, ctx);
}

function oriented(n: Relation): { op: string; sides: AnswerNode[] } | null {
  if (n.sides.length !== 2) return null;
  const op = n.ops[0];
  if (op === '>') return { op: '<', sides: [n.sides[1], n.sides[0]] };
  if (op === '\\geq') return { op: '\\leq', sides: [n.sides[1], n.sides[0]] };
  return { op, sides: n.sides };
}

function leafJson(n: AnswerNode, ctx: CompareContext | null): MathJson | null {
  return n.kind === 'expr' ? parsedLeaf(n.latex, ctx?.rename) : null;
}

/** Relation against relation: solved inequalities as sets, equations up to a factor, others side by side (rule 8). */
export function compareRelations(p: Relation, g: Relation, ctx: CompareContext): NodeComparison {
  const pi = toSetParts(p);
  const gi = toSetParts(g);
  if (pi && gi) {
    // `t < 4` is not `x < 4`: a solved inequality in another unknown (rule `variable`).
    const pv = solvedVariable(p);
    const gv = solvedVariable(g);
    if (pv !== null && gv !== null && pv !== gv) return { equality: 'different', rule: 'variable' };
    return { equality: matchUnordered(pi, gi, (a, b) => comparePart(a, b, ctx)), rule: 'inequality' };
  }
  if (p.sides.length > 2 || g.sides.length > 2) return { equality: compareOrderChains(p, g, ctx), rule: 'relation' };
  const po = oriented(p);
  const go = oriented(g);
  if (!po || !go) return { equality: 'unknown', rule: 'relation' };
  if (po.op === '=' && go.op === '=') {
    const pl = leafJson(po.sides[0], ctx);
    const pr = leafJson(po.sides[1], ctx);
    const gl = leafJson(go.sides[0], null);
    const gr = leafJson(go.sides[1], null);
    if (pl !== null && pr !== null && gl !== null && gr !== null) return { equality: compareEquations([pl, pr], [gl, gr]), rule: 'equation' };
    return { equality: matchOrdered(po.sides, go.sides, ctx), rule: 'equation' };
  }
  if (po.op !== go.op) return { equality: 'different', rule: 'relation' };
  const direct = matchOrdered(po.sides, go.sides, ctx);
  if (direct === 'equal' || (po.op !== '\\neq' && po.op !== '=')) return { equality: direct, rule: 'relation' };
  return { equality: matchOrdered(po.sides, [go.sides[1], go.sides[0]], ctx), rule: 'relation' };
}

/**
 * Rule `ratio`: `a : b` against `c : d` (or a fraction) as the quotient a/b; ratios of three or more parts
 * are equal up to a common non-zero factor (`2:4:6` = `1:2:3`).
 */
export function compareRatios(p: AnswerNode[], g: AnswerNode[], ctx: CompareContext): Equality {
  if (p.length !== g.length) return 'different';
  const latex = (n: AnswerNode): string | null => (n.kind === 'expr' ? n.latex : null);
  let out: Equality = 'equal';
  for (let k = 1; k < p.length; k++) {
    const [pk, p0, gk, g0] = [latex(p[k]), latex(p[0]), latex(g[k]), latex(g[0])];
    if (pk === null || p0 === null || gk === null || g0 === null) return 'different';
    const e = nodesOf(ctx)({ kind: 'expr', latex: `\\frac{${p0}}{${pk}}` }, { kind: 'expr', latex: `\\frac{${g0}}{${gk}}` }, ctx).equality;
    if (e === 'different') return 'different';
    if (e === 'unknown') out = 'unknown';
  }
  return out;
}
