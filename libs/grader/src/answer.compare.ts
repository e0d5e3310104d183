import { parseAnswer, type AnswerNode } from './answer.parser';
import { GraderError } from './errors';
import { decimalLiteral } from './decimal.approximation';
import { type Equality } from './expression.compare';
import { evaluate } from './expression.evaluator';
import { both, compareLeaves, parsedLeaf, type CompareContext, type NodeComparison } from './leaf.compare';
import { differentNames, isBareVariable, labelName, sameLabel } from './label.names';
import { phraseValue } from './phrase.value';
import {
  boundVariables,
  chainValue,
  compareRatios,
  compareRelations,
  comparePart,
  isConstant,
  matchOrdered,
  matchUnordered,
  toSetParts,
  workingValue,
} from './relation.compare';

export { hasDecimal, leafLatex, percentPairs, type CompareContext } from './leaf.compare';

export type { NodeComparison } from './leaf.compare';

const NO_FLAGS: CompareContext = { predPercent: false, goldPercent: false, compareNodes: (p, g, c) => compareNodes(p, g, c) };

/** The context for the parts of an answer: no top-level percent flags, the same hints and renames. */
function inner(ctx: CompareContext): CompareContext {
  return ctx.hints || ctx.rename ? { predPercent: false, goldPercent: false, hints: ctx.hints, rename: ctx.rename, compareNodes: ctx.compareNodes } : NO_FLAGS;
}

/** An item of a list with the name it was given (`x = 3` -> {label: `x`, value: `3`}). */
interface Item {
  label: string | null;
  value: AnswerNode;
  inconsistent?: true;
}

function items(n: AnswerNode, ctx: CompareContext): Item[] {
  if (n.kind === 'list') return n.items.flatMap((i) => items(i, ctx));
  const c = chainValue(n, ctx);
  if (c === 'inconsistent') return [{ label: null, value: n, inconsistent: true }];
  if (c) return [{ label: c.label ? labelName(c.label) : null, value: c.value }];
  return [{ label: null, value: n }];
}

function scaledMatrix(n: Extract<AnswerNode, { kind: 'matrix' }>): AnswerNode[][] {
  if (!n.scale) return n.rows;
  return n.rows.map((r) => r.map((c) => (c.kind === 'expr' ? { kind: 'expr', latex: `(${n.scale})\\cdot(${c.latex})` } : c)));
}

/** A column vector (n x 1 matrix) against a tuple in parentheses: the same n values in order. */
function vectorAgainstTuple(m: Extract<AnswerNode, { kind: 'matrix' }>, t: Extract<AnswerNode, { kind: 'tuple' }>, predIsMatrix: boolean, ctx: CompareContext): NodeComparison | null {
  if (t.open !== '(' || t.close !== ')' || m.rows.some((r) => r.length !== 1)) return null;
  const entries = scaledMatrix(m).map((r) => r[0]);
  return { equality: predIsMatrix ? matchOrdered(entries, t.items, ctx) : matchOrdered(t.items, entries, ctx), rule: 'vector_tuple' };
}

/** Rule `matrix_expression`: at least one side is a matrix written as an expression (sum, product, power, ^T). */
function matrixLatex(n: AnswerNode): string | null {
  if (n.kind === 'matrix') return n.latex;
  if (n.kind === 'expr' && /\\begin\{[pbvBV]?matrix\}|\\begin\{array\}/.test(n.latex)) return n.latex;
  return null;
}

/** The option a letter names, when the problem lists options (problem-aware rule `choice_option`). */
function optionNode(letter: string, ctx: CompareContext): AnswerNode | null {
  const text = ctx.hints?.choices?.get(letter);
  if (!text) return null;
  try {
    return definedValue(parseAnswer(text), ctx) ?? parseAnswer(text);
  } catch {
    return null;
  }
}

/** A name the problem defines as a constant (`Let j = 52 - s.`) stands for its value (rule `defined_name`). */
function definedValue(n: AnswerNode, ctx: CompareContext): AnswerNode | null {
  const name = n.kind === 'expr' ? n.latex.trim() : n.kind === 'text' ? n.raw.trim() : null;
  const value = name && /^[a-zA-Z]$/.test(name) ? ctx.hints?.definitions?.get(name) : undefined;
  if (!value) return null;
  const [num, den] = value.split('/');
  return { kind: 'expr', latex: den ? `\\frac{${num}}{${den}}` : num };
}

/** `(r, l) = (1, 1)`: a tuple of names given a tuple of values is a list of named values. */
function tupleAssignment(n: AnswerNode, ctx: CompareContext): AnswerNode | null {
  if (n.kind !== 'relation' || n.ops.length !== 1 || n.ops[0] !== '=') return null;
  const [l, r] = n.sides;
  if (l.kind !== 'tuple' || r.kind !== 'tuple' || l.items.length !== r.items.length || !l.items.every((i) => i.kind === 'expr' && /^[a-zA-Z]$/.test(i.latex.trim()))) return null;
  void ctx;
  return { kind: 'list', braces: false, items: l.items.map((name, k) => ({ kind: 'relation', ops: ['='], sides: [name, r.items[k]] })) };
}

function compareChoice(pred: AnswerNode, gold: Extract<AnswerNode, { kind: 'choice' }>, ctx: CompareContext): NodeComparison {
  if (pred.kind === 'choice') return { equality: pred.letter === gold.letter ? 'equal' : 'different', rule: 'choice' };
  if (pred.kind === 'expr' && /^[a-eA-E]$/.test(pred.latex.trim()))
    return { equality: pred.latex.trim().toUpperCase() === gold.letter ? 'equal' : 'different', rule: 'choice' };
  if (pred.kind === 'text') {
    // `option c`, `answer (c)`: one letter a-e and no other standalone letter (`(C) and (D)` is a hedge).
    const letters = pred.words.split(' ').filter((w) => /^[a-e]$/.test(w));
    const m = /^(?:(?:option|choice|answer)\s+)?([a-e])\b/.exec(pred.words);
    return { equality: m && letters.length === 1 && m[1].toUpperCase() === gold.letter ? 'equal' : 'different', rule: 'choice' };
  }
  // A value against a lettered gold: the option whose text equals the value, when exactly one does.
  const choices = ctx.hints?.choices;
  if (choices) {
    const matching = [...choices.keys()].filter((letter) => {
      const opt = optionNode(letter, ctx);
      try {
        return opt !== null && compareNodes(pred, opt, inner(ctx)).equality === 'equal';
      } catch {
        return false;
      }
    });
    if (matching.length === 1) return { equality: matching[0] === gold.letter ? 'equal' : 'different', rule: 'choice_option' };
  }
  return { equality: 'different', rule: 'choice' };
}

/** Lists of values: hedges, the unknown asked for, labelled unknowns, order (rules 7, 9). */
function compareLists(pred: AnswerNode, gold: AnswerNode, ctx: CompareContext): NodeComparison {
  const sub = inner(ctx);
  const ps = items(pred, ctx);
  const gs = items(gold, ctx);
  const eq = (a: AnswerNode, b: AnswerNode): Equality => compareNodes(a, b, sub).equality;
  if (ps.some((p) => p.inconsistent)) return { equality: 'different', rule: 'hedged' };
  if (gold.kind === 'tuple' || pred.kind === 'tuple') {
    // Labelled unknowns against an ordered tuple: in the order the prediction names them.
    const tuple = gold.kind === 'tuple' ? gold : (pred as Extract<AnswerNode, { kind: 'tuple' }>);
    const list = gold.kind === 'tuple' ? ps : gs;
    if (tuple.open === '(' && list.length === tuple.items.length && list.every((i) => i.label !== null)) {
      const values = list.map((i) => i.value);
      return { equality: gold.kind === 'tuple' ? matchOrdered(values, tuple.items, sub) : matchOrdered(tuple.items, values, sub), rule: 'labelled_list' };
    }
    if (!(gs.length === 1 && ps.length > 1)) return { equality: 'different', rule: 'structure' };
  }
  const named = (xs: Item[]) => xs.every((i) => i.label !== null);
  if (gs.length === 1 && ps.length > 1) {
    const labels = ps.map((p) => p.label);
    const goldName = gs[0].label;
    if (goldName !== null && named(ps)) {
      // The gold names its unknown (`a = 4`): the prediction's value of that unknown answers it (rule `variable`).
      const hits = ps.filter((p) => p.label === goldName);
      if (hits.length === 0) return { equality: 'different', rule: 'variable' };
      // Two different values of the one unknown (`x = 2, x = 3`) are a hedge (rule 9).
      const hit = hits[0];
      if (hits.some((h) => eq(h.value, hit.value) !== 'equal')) return { equality: 'different', rule: 'hedged' };
      return { ...compareNodes(hit.value, gs[0].value, sub), rule: 'labelled_list', pred: hit.value, gold: gs[0].value };
    }
    const asked = ctx.hints?.askedVariable;
    if (asked && labels.every((l) => l !== null) && new Set(labels).size === labels.length) {
      const hit = ps.find((p) => p.label === asked || p.label?.toLowerCase() === asked.toLowerCase());
      if (hit) return { ...compareNodes(hit.value, gs[0].value, sub), rule: 'asked_variable', pred: hit.value, gold: gs[0].value };
    }
    // The same value given twice is one value; two different values are a hedge (rule 9).
    if (ps.every((p) => eq(p.value, ps[0].value) === 'equal')) return { ...compareNodes(ps[0].value, gs[0].value, sub), pred: ps[0].value, gold: gs[0].value };
    return { equality: 'different', rule: 'hedged' };
  }
  const pl = ps.map((p) => p.label);
  const gl = gs.map((g) => g.label);
  // Both sides name every value and the names differ: values of other unknowns (rule `variable`).
  if (named(ps) && named(gs) && differentNames(pl as string[], gl as string[])) return { equality: 'different', rule: 'variable' };
  const unique = (ls: (string | null)[]) => ls.every((l) => l !== null) && new Set(ls).size === ls.length;
  if (ps.length === gs.length && unique(pl) && unique(gl) && pl.every((l) => gl.includes(l))) {
    const byLabel = ps.map((p) => [p.value, gs.find((g) => g.label === p.label)!.value] as const);
    return { equality: byLabel.reduce<Equality>((acc, [a, b]) => (acc === 'different' ? acc : both(acc, eq(a, b))), 'equal'), rule: 'labelled_list' };
  }
  if (ctx.hints?.ordered) return { equality: matchOrdered(ps.map((p) => p.value), gs.map((g) => g.value), sub), rule: 'ordered_list' };
  return { equality: matchUnordered(ps.map((p) => p.value), gs.map((g) => g.value), eq), rule: 'set' };
}


const intervalish = (n: AnswerNode): boolean =>
  n.kind === 'union' || n.kind === 'reals' || n.kind === 'empty' || n.kind === 'relation' ||
  (n.kind === 'tuple' && (n.open === '[' || n.close === ']' || n.items.some((i) => i.kind === 'expr' && /\\infty/.test(i.latex))));

/** `[a, b, ..]` without an infinite end: an interval or a list of values. */
function squareBrackets(n: AnswerNode): n is Extract<AnswerNode, { kind: 'tuple' }> {
  return n.kind === 'tuple' && n.open === '[' && n.close === ']' && !n.items.some((i) => i.kind === 'expr' && /\\infty/.test(i.latex));
}

/** The value of a constant leaf as a double, or null. */
function constantValue(n: AnswerNode): number | null {
  if (n.kind !== 'expr' || !isConstant(n)) return null;
  try {
    const v = evaluate(parsedLeaf(n.latex)).approx;
    return Number.isFinite(v) ? v : null;
  } catch {
    return null;
  }
}

/**
 * Square brackets that cannot hold an interval hold a list of values (rule `list_values`): three or more
 * items, or a pair in decreasing order (`[5, 2]`, eigenvalues); unless the problem asks for an interval.
 */
function valueList(n: AnswerNode, ctx: CompareContext): boolean {
  if (!squareBrackets(n)) return false;
  if (n.items.length >= 3) return true;
  if (n.items.length !== 2 || ctx.hints?.interval) return false;
  const lo = constantValue(n.items[0]);
  const hi = constantValue(n.items[1]);
  return lo !== null && hi !== null && lo > hi;
}

function asList(n: AnswerNode): AnswerNode {
  return squareBrackets(n) ? { kind: 'list', items: n.items, braces: false } : n;
}

/** A ratio of two parts is the quotient (`11:21` = `\frac{11}{21}`). */
function ratioAsExpr(n: AnswerNode): AnswerNode {
  if (n.kind !== 'ratio' || n.parts.length !== 2 || n.parts.some((p) => p.kind !== 'expr')) return n;
  const [a, b] = n.parts as { latex: string }[];
  return { kind: 'expr', latex: `\\frac{${a.latex}}{${b.latex}}` };
}

/** `f(t) = ..` against `f(x) = ..` (or `k(t)`): the prediction's bound variable renamed to the gold's (rule `renamed_variable`). */
function renameFor(pLabel: AnswerNode | null, gLabel: AnswerNode | null): Map<string, string> | null {
  const p = pLabel ? boundVariables(pLabel) : null;
  const g = gLabel ? boundVariables(gLabel) : null;
  if (!p || !g || p.args.length !== g.args.length || p.args.every((a, i) => a === g.args[i])) return null;
  return new Map(p.args.map((a, i) => [a, g.args[i]]));
}

/** A gold that is one letter a-e (either case): an option's letter, upper-cased. */
export function optionLetter(n: AnswerNode): string | null {
  return n.kind === 'expr' && /^[a-eA-E]$/.test(n.latex.trim()) ? n.latex.trim().toUpperCase() : null;
}

/** Two chains that name different quantities: equal only as one equation (`y = 2x + 3`, `x = \frac{y-3}{2}`). */
function differentlyNamed(pred: AnswerNode, gold: AnswerNode, ctx: CompareContext): NodeComparison {
  const twoSided = (n: AnswerNode) => n.kind === 'relation' && n.ops.length === 1 && n.ops[0] === '=';
  if (pred.kind === 'relation' && gold.kind === 'relation' && twoSided(pred) && twoSided(gold)) {
    const r = compareRelations(pred, gold, ctx);
    if (r.equality === 'equal') return r;
  }
  return { equality: 'different', rule: 'variable' };
}

/**
 * Compares a parsed prediction with a parsed gold answer (docs/design/grading.md rules 3-9 and GRADING-RULES.md).
 * Returns `unknown` when the fast path cannot decide; never throws for a structural mismatch (that is
 * `different`), but lets `GraderError` (unparseable, refused) propagate so the caller can fail closed or
 * offload.
 */
export function compareNodes(pred: AnswerNode, gold: AnswerNode, ctx: CompareContext = NO_FLAGS): NodeComparison {
  // The relation rules (relation.compare.ts) compare parts through the context's compareNodes.
  if (!ctx.compareNodes) ctx = { ...ctx, compareNodes };
  const assigned = tupleAssignment(pred, ctx);
  if (assigned && gold.kind !== 'relation' && gold.kind !== 'tuple') return compareNodes(assigned, gold, ctx);
  // With the problem's options, a gold that is one lower-case letter (`c`) names an option.
  if (gold.kind === 'expr' && /^[a-e]$/.test(gold.latex.trim()) && ctx.hints?.choices?.has(gold.latex.trim().toUpperCase()))
    return compareNodes(pred, { kind: 'choice', letter: gold.latex.trim().toUpperCase() }, ctx);
  // A gold that is one option letter (`c`) against an answer written as an option (`c)`, `(C)`, `Option C`).
  const letter = optionLetter(gold);
  if (letter && (pred.kind === 'choice' || (pred.kind === 'text' && /^(?:option|choice|answer)\s+[a-e]\b/.test(pred.words))))
    return compareNodes(pred, { kind: 'choice', letter }, ctx);
  if (ctx.hints?.definitions && gold.kind !== 'text') {
    const value = definedValue(pred, ctx);
    if (value && !(gold.kind === 'expr' && gold.latex.trim() === (pred as { latex?: string }).latex?.trim()))
      return { ...compareNodes(value, gold, ctx), rule: 'defined_name', pred: value };
  }
  // Working in steps, each from the last one's value: the last value (rule `chain`).
  const worked = pred.kind === 'list' && gold.kind !== 'list' ? workingValue(pred, ctx) : null;
  if (worked) {
    const r = compareNodes(worked, gold, ctx);
    return { ...r, rule: r.equality === 'equal' ? 'chain' : r.rule, pred: worked };
  }
  // A chain or labelled value: `x = v`, `20 + 25 = 45`, `v = x`; an inconsistent chain offers two values.
  const gc = gold.kind === 'relation' ? chainValue(gold, ctx) : null;
  let pc = pred.kind === 'relation' ? chainValue(pred, ctx) : null;
  if (pc === null && pred.kind === 'relation' && gold.kind !== 'relation' && ctx.hints) pc = chainValue(pred, ctx, true);
  if (pc === 'inconsistent' && gold.kind !== 'relation') return { equality: 'different', rule: 'hedged' };
  const gv = gc && gc !== 'inconsistent' ? gc : null;
  const pv = pc && pc !== 'inconsistent' ? pc : null;
  if (gv && pv) {
    // Both name the quantity: a value of another unknown (`t = 4` against `s = 4`) is not the answer. The two
    // may still be one equation solved for different names (`y = 2x + 3`, `x = \frac{y - 3}{2}`).
    if (gv.label && pv.label && !sameLabel(pv.label, gv.label)) return differentlyNamed(pred, gold, ctx);
    const rename = renameFor(pv.label, gv.label);
    if (rename) return { ...compareNodes(pv.value, gv.value, { ...ctx, rename }), rule: 'renamed_variable', pred: pv.value, gold: gv.value };
    return compareNodes(pv.value, gv.value, ctx);
  }
  // `a = 4, r = 0` against `a = 4`: the value of the unknown the gold names.
  if (gv && gv.label && pred.kind === 'list') return compareLists(pred, gold, ctx);
  if (gv && pred.kind !== 'relation') return compareNodes(pred, gv.value, ctx);
  if (pv && gold.kind !== 'relation') {
    // With the problem: the value of an unknown other than the one it asks for (`Solve .. for s.`, `t = 4`).
    const asked = ctx.hints?.askedVariable;
    const name = pv.label ? labelName(pv.label) : null;
    if (asked && isBareVariable(name) && name.toLowerCase() !== asked.toLowerCase()) return { equality: 'different', rule: 'variable', pred: pv.value };
    let r = compareNodes(pv.value, gold, ctx);
    let value = pv.value;
    // `\frac{1}{3} \approx 0.333` against a decimal gold `0.333`: the chain's checked decimal is its answer.
    if (r.equality !== 'equal' && pv.approximation && gold.kind === 'expr' && decimalLiteral(gold.latex)?.decimals) {
      const approx = compareNodes(pv.approximation, gold, ctx);
      if (approx.equality === 'equal') [r, value] = [approx, pv.approximation];
    }
    return pv.label === null && r.equality === 'equal' && pred.kind === 'relation' && pred.ops.length > 0 ? { ...r, rule: 'chain', pred: value } : r;
  }
  if (gold.kind === 'relation' && pred.kind === 'relation') return compareRelations(pred, gold, ctx);

  // A list of values in square brackets (eigenvalues, roots) is a list, not an interval, when the gold is a
  // list or when either side cannot be an interval (`[5, 2]`, three or more items).
  const pSquare = squareBrackets(pred);
  const gSquare = squareBrackets(gold);
  if (
    (pSquare && gold.kind === 'list') ||
    (pSquare && gSquare && (valueList(pred, ctx) || valueList(gold, ctx))) ||
    (gSquare && pred.kind === 'list' && valueList(gold, ctx))
  ) {
    const r = compareLists(asList(pred), asList(gold), ctx);
    return { ...r, rule: r.rule === 'set' ? 'list_values' : r.rule };
  }
  const gSet = toSetParts(gold);
  const pSet = toSetParts(pred);
  if (gSet && pSet && (intervalish(gold) || intervalish(pred))) {
    return { equality: matchUnordered(pSet, gSet, (a, b) => comparePart(a, b, inner(ctx))), rule: 'interval' };
  }
  if (gold.kind === 'relation' || pred.kind === 'relation') return { equality: 'different', rule: 'relation' };

  if (gold.kind === 'choice') {
    if (pred.kind === 'list' && pred.items.length > 1) return { equality: 'different', rule: 'hedged' };
    return compareChoice(pred, gold, ctx);
  }
  if (pred.kind === 'choice' && gold.kind !== 'list') {
    const opt = optionNode(pred.letter, ctx);
    if (opt) return { ...compareNodes(opt, gold, inner(ctx)), rule: 'choice_option', pred: opt };
    return { equality: 'different', rule: 'structure' };
  }
  if (gold.kind === 'list' || pred.kind === 'list') return compareLists(pred, gold, ctx);

  if (gold.kind === 'ratio' || pred.kind === 'ratio') {
    if (gold.kind === 'ratio' && pred.kind === 'ratio') return { equality: compareRatios(pred.parts, gold.parts, inner(ctx)), rule: 'ratio' };
    const p = ratioAsExpr(pred);
    const g = ratioAsExpr(gold);
    if (p.kind === 'ratio' || g.kind === 'ratio') return { equality: 'different', rule: 'ratio' };
    return compareNodes(p, g, ctx);
  }
  const pm = matrixLatex(pred);
  const gm = matrixLatex(gold);
  if ((pm || gm) && !(pred.kind === 'matrix' && gold.kind === 'matrix')) {
    if (pred.kind === 'matrix' && gold.kind === 'tuple') return vectorAgainstTuple(pred, gold, true, ctx) ?? { equality: 'different', rule: 'structure' };
    if (gold.kind === 'matrix' && pred.kind === 'tuple') return vectorAgainstTuple(gold, pred, false, ctx) ?? { equality: 'different', rule: 'structure' };
    if (pm && gm) return { ...compareLeavesSafe(pm, gm, ctx), rule: 'matrix_expression' };
    return { equality: 'different', rule: 'structure' };
  }
  if (gold.kind === 'tuple' || pred.kind === 'tuple') {
    if (gold.kind !== 'tuple' || pred.kind !== 'tuple') return { equality: 'different', rule: 'structure' };
    if (gold.open !== pred.open || gold.close !== pred.close) return { equality: 'different', rule: 'tuple' };
    return { equality: matchOrdered(pred.items, gold.items, inner(ctx)), rule: 'tuple' };
  }
  if (gold.kind === 'matrix' && pred.kind === 'matrix') {
    const pr = scaledMatrix(pred);
    const gr = scaledMatrix(gold);
    if (pr.length !== gr.length || pr.some((r, i) => r.length !== gr[i].length)) return { equality: 'different', rule: 'matrix_shape' };
    return { equality: matchOrdered(pr.flat(), gr.flat(), inner(ctx)), rule: 'matrix' };
  }
  if (pred.kind === 'text' && gold.kind !== 'text') {
    const value = phraseValue(pred.raw, ctx.hints);
    if (!value) return { equality: 'different', rule: 'text' };
    return { ...compareNodes(value, gold, ctx), rule: 'phrase_value', pred: value };
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
  if (gold.kind === 'expr' && pred.kind === 'expr') return compareLeaves(pred.latex, gold.latex, ctx);
  if (gold.kind !== pred.kind) return { equality: 'different', rule: 'structure' };
  return { equality: 'equal', rule: 'structure' };
}

function compareLeavesSafe(pred: string, gold: string, ctx: CompareContext): { equality: Equality } {
  try {
    return compareLeaves(pred, gold, ctx);
  } catch (e) {
    if (e instanceof GraderError && e.code !== 'refused_huge') return { equality: 'different' };
    throw e;
  }
}

/** True when every expression leaf of a parsed gold parses (a gold that does not is reported, rule `gold_unparsed`). */
export function leavesParse(n: AnswerNode): boolean {
  switch (n.kind) {
    case 'expr':
      try {
        parsedLeaf(n.latex);
        return true;
      } catch (e) {
        if (e instanceof GraderError && e.code === 'unparseable') return false;
        return true;
      }
    case 'list':
      return n.items.every(leavesParse);
    case 'tuple':
      return n.items.every(leavesParse);
    case 'union':
      return n.parts.every(leavesParse);
    case 'ratio':
      return n.parts.every(leavesParse);
    case 'relation':
      return n.sides.every(leavesParse);
    case 'matrix':
      return n.rows.every((r) => r.every(leavesParse));
    default:
      return true;
  }
}
