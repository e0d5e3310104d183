import { performance } from 'node:perf_hooks';
import { extractAnswer, lastBoxes, stripAnswerMarker } from './answer.extractor';
import { compareNodes, leafLatex, leavesParse, optionLetter, percentPairs, type NodeComparison } from './answer.compare';
import { describeNode, parseAnswer, type AnswerNode } from './answer.parser';
import { GraderError } from './errors';
import { isComplexConstant } from './complex.evaluator';
import { freeVariables, parseLatex } from './expression.evaluator';
import { normalizeLatex, type NormalizedAnswer } from './latex.normalizer';
import { problemHints, type ProblemHints } from './problem.hints';
import { agreesAtCoarserPrecision, decimalLiteral, hundredthOf } from './decimal.approximation';
import { Rational } from './rational';
import { toSympy } from './sympy.serializer';
import type { SymbolicBackend } from './symbolic.port';
import { convertToUnit, unitMismatch } from './unit.rules';

/** Why a rollout got its reward: recorded in `RewardAssigned` so a replay can explain it. */
export interface Verdict {
  correct: boolean;
  /** The answer taken from the response (rule 1), or null when there is none. */
  extracted: string | null;
  normalizedPrediction: string | null;
  normalizedGold: string | null;
  /** The rule that decided (docs/design/grading.md and GRADING-RULES.md list them all): `normalized_equal`, `numeric`,
   * `symbolic`, `percent`, `set`, `tuple`, `interval`, `matrix`, `equation`, `inequality`, `relation`, `text`,
   * `choice`, `base`, `hedged`, `structure`, `no_answer`, `fail_closed`, `refused`, `undecided`, `sympy`,
   * `timeout`, and `gold_unparsed`, `chain`, `phrase_value`, `ratio`, `renamed_variable`, `vector_tuple`,
   * `matrix_expression`, `list_values`, `labelled_list`, `ordered_list`, `asked_variable`, `multi_box`,
   * `significant_digits`, `rounding`, `approximate`, `complex`, `choice_option`, `unit`, `unit_mismatch`,
   * `variable`, `decimal_precision`. */
  rule: string;
  /** The forms the deciding rule compared (parsed answers, or what a rule reduced them to), for `--explain`. */
  compared?: { prediction: string; gold: string };
  /** Wall-clock grading time in milliseconds. */
  ms: number;
}

/** Options of {@link grade}. */
export interface GradeOptions {
  /** Extract the answer from a full response (default true); false = `prediction` is already the answer. */
  extract?: boolean;
  /**
   * The problem text (problem-aware mode): a precision it asks for, a unit it names, its options, an
   * order it asks for, the unknown it asks for are used. Without it the grader stays strict.
   */
  problem?: string;
}

/** Options of {@link gradeAsync}. */
export interface GradeAsyncOptions extends GradeOptions {
  /** Where undecided expression checks go (sympy in the sandbox); without it they fail closed. */
  symbolic?: SymbolicBackend;
  /** Limit for one offloaded check in ms (default 4000); past it the verdict is `false`, rule `timeout`. */
  timeoutMs?: number;
}

interface Core {
  verdict: Omit<Verdict, 'ms'>;
  /** A pair of expression leaves the fast path could not decide, for the symbolic backend. */
  pending?: { pred: string; gold: string };
}

/** Decimal comma (`1000,99`) when the gold is a decimal number and the prediction cannot be a d,ddd group. */
function decimalComma(pred: string, gold: string): string {
  if (/^[+-]?\d*\.\d+$/.test(gold) && /^[+-]?\d+,\d+$/.test(pred) && !/^[+-]?\d{1,3}(,\d{3})+$/.test(pred)) return pred.replace(',', '.');
  return pred;
}

/** Longer answers are not graded (fail closed): every step stays bounded. */
const MAX_ANSWER_CHARS = 2000;

const PLAIN_NUMBER = /^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?$/;

/** Rule 3/5 for two plain decimal numbers, without the LaTeX parser; null when either is not one. */
function numericFastPath(pred: string, predPct: boolean, gold: string, goldPct: boolean): boolean | null {
  if (!PLAIN_NUMBER.test(pred) || !PLAIN_NUMBER.test(gold) || !/\d/.test(pred) || !/\d/.test(gold)) return null;
  const p = Rational.parseDecimal(pred.replace(/,/g, ''));
  const g = Rational.parseDecimal(gold.replace(/,/g, ''));
  if (!p || !g) return null;
  const hundred = new Rational(100n);
  return percentPairs(p, g, { predPercent: predPct, goldPercent: goldPct }, (x) => x.div(hundred)).some(([a, b]) => a.equals(b));
}

/** Rule `decimal_precision` for two plain decimal numbers (rule 5's readings of `%` included). */
function decimalPrecisionFastPath(pred: string, predPct: boolean, gold: string, goldPct: boolean): boolean {
  if (!pred.includes('.') && !gold.includes('.')) return false;
  const p = decimalLiteral(pred);
  const g = decimalLiteral(gold);
  if (!p || !g) return false;
  return percentPairs(p, g, { predPercent: predPct, goldPercent: goldPct }, hundredthOf).some(([a, b]) => agreesAtCoarserPrecision(a, b));
}

/** A gold normalised and parsed once: the rollouts of a group (and a replay) grade against the same gold. */
interface PreparedGold {
  normalized: NormalizedAnswer;
  node: AnswerNode | 'unparsed' | 'failed';
}
const GOLD_CACHE_SIZE = 2048;
const goldCache = new Map<string, PreparedGold>();

function preparedGold(gold: string): PreparedGold {
  const hit = goldCache.get(gold);
  if (hit) return hit;
  const normalized = normalizeLatex(gold);
  let node: PreparedGold['node'] = 'unparsed';
  if (normalized.text && normalized.text.length <= MAX_ANSWER_CHARS) {
    try {
      const parsed = parseAnswer(normalized.text);
      node = leavesParse(parsed) ? parsed : 'unparsed';
    } catch (e) {
      node = e instanceof GraderError && e.code === 'unparseable' ? 'unparsed' : 'failed';
    }
  }
  // Parsed answers are never mutated, so a cached one is shared safely.
  const out = { normalized, node };
  if (goldCache.size >= GOLD_CACHE_SIZE) goldCache.delete(goldCache.keys().next().value as string);
  goldCache.set(gold, out);
  return out;
}

/** `(C) 12` / `c) 12`: an option letter followed by the option's value. */
const CHOICE_LEAD = /^\(?([A-Ea-e])\)\s+(\S.*)$/;

/** Items of a gold that names several values (a list or a tuple), for answers given in several boxes. */
function goldParts(g: AnswerNode): number {
  if (g.kind === 'list' || g.kind === 'tuple') return g.items.length;
  return 1;
}

function parsePrediction(text: string, gold: AnswerNode, goldText: string, hints: ProblemHints | undefined): AnswerNode {
  const lead = CHOICE_LEAD.exec(text);
  if (lead && !/\(?\b[A-Ea-e]\)/.test(lead[2])) {
    // `(C) 12` answers choice C: against a lettered gold (or with the problem's options) the letter decides,
    // otherwise the restated value does.
    const letter = lead[1].toUpperCase();
    if (gold.kind === 'choice' || optionLetter(gold) !== null || hints?.choices?.has(letter)) return { kind: 'choice', letter };
    return parseAnswer(lead[2]);
  }
  return parseAnswer(decimalComma(text, goldText));
}

function gradeCore(prediction: string, gold: string, opts: GradeOptions): Core {
  if (typeof prediction !== 'string') throw new GraderError('invalid_input', 'prediction must be a string');
  if (typeof gold !== 'string') throw new GraderError('invalid_input', 'gold must be a string (the reference answer)');
  if (opts.problem !== undefined && typeof opts.problem !== 'string') throw new GraderError('invalid_input', 'problem must be a string (the problem text) or omitted');
  const hints = opts.problem ? problemHints(opts.problem) : undefined;
  const extracted = opts.extract === false ? prediction.trim() || null : extractAnswer(prediction);
  // Normalising is linear but not free: far longer answers than any rule grades are not normalised at all.
  if (gold.length > 4 * MAX_ANSWER_CHARS || (extracted?.length ?? 0) > 4 * MAX_ANSWER_CHARS)
    return { verdict: { extracted, normalizedPrediction: null, normalizedGold: null, correct: false, rule: 'fail_closed' } };
  const prepared = preparedGold(gold);
  const ng = prepared.normalized;
  const base = { extracted, normalizedPrediction: null, normalizedGold: ng.text || null };
  if (!ng.text) return { verdict: { ...base, correct: false, rule: 'gold_unparsed' } };
  if (extracted === null) return { verdict: { ...base, correct: false, rule: 'no_answer' } };
  let np: NormalizedAnswer = normalizeLatex(stripAnswerMarker(extracted));
  const normalizedPrediction = np.text || null;
  const out = (correct: boolean, rule: string, r?: NodeComparison, nodes?: [AnswerNode, AnswerNode]): Omit<Verdict, 'ms'> => {
    const v: Omit<Verdict, 'ms'> = { ...base, normalizedPrediction, correct, rule };
    const p = r?.pred ?? nodes?.[0];
    const g = r?.gold ?? nodes?.[1];
    if (p && g) v.compared = { prediction: describeNode(p), gold: describeNode(g) };
    return v;
  };
  if (ng.text.length > MAX_ANSWER_CHARS) return { verdict: out(false, 'fail_closed') };
  if (!np.text || np.text.length > MAX_ANSWER_CHARS) return { verdict: out(false, 'fail_closed') };
  if (np.text === ng.text && !(np.unit && ng.unit && unitMismatch(np.unit, ng.unit))) return { verdict: out(true, 'normalized_equal') };
  let unitRule: string | null = null;
  const converted = hints ? convertToUnit(np, hints) : null;
  if (converted) {
    np = converted;
    unitRule = 'unit';
  } else if (np.unit && ng.unit && unitMismatch(np.unit, ng.unit)) return { verdict: out(false, 'unit_mismatch') };
  const fast = numericFastPath(np.text, np.percent, ng.text, ng.percent);
  if (fast === true || (fast === false && !hints?.approximate && hints?.decimals === undefined && hints?.significantFigures === undefined)) {
    if (fast === false && decimalPrecisionFastPath(np.text, np.percent, ng.text, ng.percent)) return { verdict: out(true, unitRule ?? 'decimal_precision') };
    return { verdict: out(fast, unitRule ?? (np.percent || ng.percent ? 'percent' : 'numeric')) };
  }
  // A gold that does not parse is reported as such (never a silent false).
  if (prepared.node === 'unparsed') return { verdict: out(false, 'gold_unparsed') };
  if (prepared.node === 'failed') return { verdict: out(false, 'fail_closed') };
  const gNode = prepared.node;
  let pNode: AnswerNode;
  try {
    pNode = parsePrediction(np.text, gNode, ng.text, hints);
  } catch {
    // Unparseable (or pathologically nested) input scores 0 (rule 10).
    return { verdict: out(false, 'fail_closed') };
  }
  const ctx = { predPercent: np.percent, goldPercent: ng.percent, hints };
  try {
    let r = compareNodes(pNode, gNode, ctx);
    // Several unknowns answered in several boxes separated by prose (rule `multi_box`).
    const n = goldParts(gNode);
    if (r.equality !== 'equal' && n > 1 && hints?.severalUnknowns && opts.extract !== false && pNode.kind !== 'list' && pNode.kind !== 'tuple') {
      const parts = lastBoxes(prediction, n);
      if (parts) {
        const joined = normalizeLatex(parts.join(', ')).text;
        const multiNode = parseAnswer(gNode.kind === 'tuple' ? `${gNode.open}${joined}${gNode.close}` : joined);
        const multi = compareNodes(multiNode, gNode, ctx);
        if (multi.equality === 'equal') r = { ...multi, rule: 'multi_box', pred: multi.pred ?? multiNode };
      }
    }
    if (r.equality === 'unknown') {
      const pending = pNode.kind === 'expr' && gNode.kind === 'expr' ? { pred: pNode.latex, gold: gNode.latex } : undefined;
      return { verdict: out(false, 'undecided', r, [pNode, gNode]), pending };
    }
    const rule = unitRule && r.equality === 'equal' ? unitRule : r.rule;
    return { verdict: out(r.equality === 'equal', rule, r, [pNode, gNode]) };
  } catch (e) {
    const code = e instanceof GraderError ? e.code : 'unsupported';
    const rule = code === 'refused_huge' ? 'refused' : 'fail_closed';
    const pending = pNode.kind === 'expr' && gNode.kind === 'expr' && code !== 'unparseable' ? { pred: pNode.latex, gold: gNode.latex } : undefined;
    return { verdict: out(false, rule, undefined, [pNode, gNode]), pending };
  }
}

/** Loads the LaTeX parser (about 0.5 s on first use) so the first real grade does not pay for it. */
export function warmUp(): void {
  grade('\\boxed{\\frac{1}{2}x}', 'x/2');
}

/**
 * Grades a model response against the gold answer with docs/design/grading.md rules 1-10 and the rules of
 * GRADING-RULES.md; synchronous and bounded (no step evaluates a huge power or factorial; checks it
 * cannot decide end as `false`, rule `undecided`/`refused`/`fail_closed`; a gold that does not parse ends
 * as `false`, rule `gold_unparsed`). With `opts.problem` the problem-aware rules apply. Throws
 * `GraderError('invalid_input')` when an argument is not a string.
 */
export function grade(prediction: string, gold: string, opts: GradeOptions = {}): Verdict {
  const t0 = performance.now();
  const { verdict } = gradeCore(prediction, gold, opts);
  return { ...verdict, ms: performance.now() - t0 };
}

/**
 * Like {@link grade}, but an expression check the fast path could not decide is sent to
 * `opts.symbolic` (sympy in the sandbox) under `opts.timeoutMs`; a check that does not finish in time
 * is `false` with rule `timeout`, so grading never blocks its caller.
 */
export async function gradeAsync(prediction: string, gold: string, opts: GradeAsyncOptions = {}): Promise<Verdict> {
  const t0 = performance.now();
  const core = gradeCore(prediction, gold, opts);
  if (!core.pending || !opts.symbolic) return { ...core.verdict, ms: performance.now() - t0 };
  let pred: string;
  let goldExpr: string;
  try {
    const pj = parseLatex(leafLatex(core.pending.pred));
    const gj = parseLatex(leafLatex(core.pending.gold));
    const vars = freeVariables(pj);
    freeVariables(gj, vars);
    const opts = { imaginary: isComplexConstant(vars) };
    pred = toSympy(pj, opts);
    goldExpr = toSympy(gj, opts);
  } catch (e) {
    if (e instanceof GraderError) return { ...core.verdict, ms: performance.now() - t0 };
    throw e;
  }
  const timeoutMs = opts.timeoutMs ?? 4000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs + 1000);
  });
  let result: Awaited<ReturnType<SymbolicBackend['check']>> | 'timeout';
  try {
    result = await Promise.race([opts.symbolic.check(pred, goldExpr, timeoutMs), timeout]);
  } catch (e) {
    result = e instanceof GraderError && e.code === 'timeout' ? 'timeout' : 'unknown';
  } finally {
    clearTimeout(timer);
  }
  const rule = result === 'timeout' ? 'timeout' : result === 'unknown' ? core.verdict.rule : 'sympy';
  return { ...core.verdict, correct: result === 'equal', rule, ms: performance.now() - t0 };
}
