import { performance } from 'node:perf_hooks';
import { extractAnswer } from './answer.extractor';
import { compareNodes, leafLatex, percentPairs } from './answer.compare';
import { parseAnswer, type AnswerNode } from './answer.parser';
import { GraderError } from './errors';
import { parseLatex } from './expression.evaluator';
import { normalizeLatex } from './latex.normalizer';
import { Rational } from './rational';
import { toSympy } from './sympy.serializer';
import type { SymbolicBackend } from './symbolic.port';

/** Why a rollout got its reward: recorded in `RewardAssigned` so a replay can explain it. */
export interface Verdict {
  correct: boolean;
  /** The answer taken from the response (rule 1), or null when there is none. */
  extracted: string | null;
  normalizedPrediction: string | null;
  normalizedGold: string | null;
  /** The rule that decided: `normalized_equal`, `numeric`, `symbolic`, `percent`, `set`, `tuple`, `interval`,
   * `matrix`, `equation`, `inequality`, `relation`, `text`, `choice`, `base`, `hedged`, `structure`,
   * `no_answer`, `fail_closed`, `refused`, `undecided`, `sympy`, `timeout`. */
  rule: string;
  /** Wall-clock grading time in milliseconds. */
  ms: number;
}

/** Options of {@link grade}. */
export interface GradeOptions {
  /** Extract the answer from a full response (default true); false = `prediction` is already the answer. */
  extract?: boolean;
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

function gradeCore(prediction: string, gold: string, opts: GradeOptions): Core {
  if (typeof prediction !== 'string') throw new GraderError('invalid_input', 'prediction must be a string');
  if (typeof gold !== 'string') throw new GraderError('invalid_input', 'gold must be a string (the reference answer)');
  const extracted = opts.extract === false ? prediction.trim() || null : extractAnswer(prediction);
  const ng = normalizeLatex(gold);
  const base = { extracted, normalizedPrediction: null, normalizedGold: ng.text || null };
  if (extracted === null) return { verdict: { ...base, correct: false, rule: 'no_answer' } };
  const np = normalizeLatex(extracted);
  const normalizedPrediction = np.text || null;
  const out = (correct: boolean, rule: string): Omit<Verdict, 'ms'> => ({ ...base, normalizedPrediction, correct, rule });
  if (!np.text || !ng.text || np.text.length > MAX_ANSWER_CHARS || ng.text.length > MAX_ANSWER_CHARS) return { verdict: out(false, 'fail_closed') };
  if (np.text === ng.text) return { verdict: out(true, 'normalized_equal') };
  const fast = numericFastPath(np.text, np.percent, ng.text, ng.percent);
  if (fast !== null) return { verdict: out(fast, np.percent || ng.percent ? 'percent' : 'numeric') };
  let pNode: AnswerNode;
  let gNode: AnswerNode;
  try {
    gNode = parseAnswer(ng.text);
    // `(C) 12` answers choice C: the letter decides, the restated value does not.
    const lead = gNode.kind === 'choice' ? /^\(([A-Ea-e])\)(?:\s|$)/.exec(np.text) : null;
    pNode = lead ? { kind: 'choice', letter: lead[1].toUpperCase() } : parseAnswer(decimalComma(np.text, ng.text));
  } catch {
    // Unparseable (or pathologically nested) input scores 0 (rule 10).
    return { verdict: out(false, 'fail_closed') };
  }
  try {
    const r = compareNodes(pNode, gNode, { predPercent: np.percent, goldPercent: ng.percent });
    if (r.equality === 'unknown') {
      const pending = pNode.kind === 'expr' && gNode.kind === 'expr' ? { pred: pNode.latex, gold: gNode.latex } : undefined;
      return { verdict: out(false, 'undecided'), pending };
    }
    return { verdict: out(r.equality === 'equal', r.rule) };
  } catch (e) {
    const code = e instanceof GraderError ? e.code : 'unsupported';
    const rule = code === 'refused_huge' ? 'refused' : 'fail_closed';
    const pending = pNode.kind === 'expr' && gNode.kind === 'expr' && code !== 'unparseable' ? { pred: pNode.latex, gold: gNode.latex } : undefined;
    return { verdict: out(false, rule), pending };
  }
}

/** Loads the LaTeX parser (about 0.5 s on first use) so the first real grade does not pay for it. */
export function warmUp(): void {
  grade('\\boxed{\\frac{1}{2}x}', 'x/2');
}

/**
 * Grades a model response against the gold answer with GRADING.md rules 1-10; synchronous and bounded
 * (no step evaluates a huge power or factorial; checks it cannot decide end as `false`, rule
 * `undecided`/`refused`/`fail_closed`). Throws `GraderError('invalid_input')` when an argument is not a string.
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
    pred = toSympy(parseLatex(leafLatex(core.pending.pred)));
    goldExpr = toSympy(parseLatex(leafLatex(core.pending.gold)));
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
