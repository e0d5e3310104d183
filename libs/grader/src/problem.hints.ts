import type { PrecisionHints } from './decimal.approximation';
import { evaluate, parseLatex } from './expression.evaluator';
import { plainExpressionToLatex } from './plain-text.converter';
import { parseUnit, type UnitSpec } from './units';

/**
 * What a problem's text says about the form of its answer (problem-aware mode, GRADING-RULES.md): the
 * precision asked for, a unit, the options of a multiple-choice question, whether a list must keep its
 * order, which unknown is asked for. Every field is optional; an empty object changes nothing.
 */
export interface ProblemHints extends PrecisionHints {
  /** The unit the answer is asked in (`in centimeters`, `(Unit: 10 ^ 4 m/s)`), with its scale. */
  unit?: UnitSpec;
  /** Options of a multiple-choice question: letter (upper case) -> the option's text. */
  choices?: Map<string, string>;
  /** A list answer must keep the problem's order (`respectively`, `separately`, a path). */
  ordered?: boolean;
  /** Names the problem defines as constants (`Let j = 52 - s.`) -> their exact value as LaTeX. */
  definitions?: Map<string, string>;
  /** The single-letter unknown asked for (`Solve ... for i.`, `Find x.`). */
  askedVariable?: string;
  /** The question asks for several unknowns (`Find the width and the length`): several boxes may answer it. */
  severalUnknowns?: boolean;
  /** The answer is an interval (`interval notation`, `the range`, `the domain`): `[5, 2]` is not a list of values. */
  interval?: boolean;
  /** The angle unit asked for (`in radians`, `in degrees`). */
  angle?: 'degrees' | 'radians';
  /** The problem text, lower-cased with spaces collapsed: numbers it states are not an answer's value. */
  text: string;
  /** The problem's LaTeX without spaces, braces, `$`, `\left`/`\right` (see {@link compactLatex}): what it restates. */
  compact: string;
}

const WORD_NUMBERS: Record<string, number> = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10 };
const PLACES: [RegExp, number][] = [
  [/hundred[- ]thousandths?\b/, 5],
  [/ten[- ]thousandths?\b/, 4],
  [/millionths?\b/, 6],
  [/thousandths?\b/, 3],
  [/hundredths?\b/, 2],
  [/tenths?\b/, 1],
];

function countWord(w: string): number | undefined {
  return /^\d+$/.test(w) ? Number(w) : WORD_NUMBERS[w.toLowerCase()];
}

/**
 * The part of a problem that asks (its last three sentences): a precision or unit mentioned earlier in
 * the setup ("a rope measured to the nearest tenth") is not what the answer is asked in.
 */
function questionPart(t: string): string {
  const sentences = t.split(/(?<=[.?!])\s+(?=\S)/);
  return sentences.slice(-3).join(' ');
}

function precisionOf(t: string): PrecisionHints {
  const float = /output format required:\s*float/.test(t);
  t = questionPart(t);
  const nearest = /\bnearest\s+(?:(?:whole\s+)?(?:number|integer)|whole|unit|one|dollar|cent|percent|degree|[a-z-]*th(?:s)?\b)/.exec(t);
  if (nearest) {
    const w = nearest[0];
    if (/cent$/.test(w)) return { decimals: 2 };
    if (/(number|integer|whole|unit|one|dollar|percent|degree)$/.test(w)) return { decimals: 0 };
    for (const [re, k] of PLACES) if (re.test(w)) return { decimals: k };
  }
  const places = /\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+decimal\s+(?:places?|digits?)\b/.exec(t) ?? /\b(\d+)\s*d\.\s?p\.?/.exec(t);
  if (places) {
    const k = countWord(places[1]);
    if (k !== undefined) return { decimals: k };
  }
  const sig = /\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+significant\s+(?:figures?|digits?)\b|\b(\d+)\s+sig\.?\s*figs?\b/.exec(t);
  if (sig) {
    const s = countWord(sig[1] ?? sig[2]);
    if (s !== undefined && s > 0) return { significantFigures: s };
  }
  if (float || /\bapproximat(?:e|ely|ion)\b|\bestimate\b|\bnumerical(?:ly)?\b/.test(t)) return { approximate: true };
  return {};
}

/** `(a) 3  (b) -1`, `\textbf{(A) }3\qquad\textbf{(B) }4`, `A. 3  B. 4` (at least two consecutive letters from A). */
function choicesOf(problem: string): Map<string, string> | undefined {
  const t = problem
    .replace(/\\(?:textbf|mathrm|text|mathbf)\s*\{\s*\(([A-Ea-e])\)\s*\}/g, '($1) ')
    .replace(/\\q?quad|\\hspace\{[^}]*\}|\$/g, ' ');
  const re = /\(([A-Ea-e])\)\s*|(?<=^|[\s:,])([A-Ea-e])\s?\)\s+/g;
  const marks: { letter: string; start: number; end: number }[] = [];
  for (const m of t.matchAll(re)) marks.push({ letter: (m[1] ?? m[2]).toUpperCase(), start: m.index, end: m.index + m[0].length });
  // Options are a run of consecutive letters starting at A; earlier `(a)` in the text (part labels) are skipped.
  let first = -1;
  for (let k = marks.length - 1; k >= 0; k--) if (marks[k].letter === 'A') {
    first = k;
    break;
  }
  if (first < 0) return undefined;
  const run = [marks[first]];
  for (let k = first + 1; k < marks.length && marks[k].letter.charCodeAt(0) === run[run.length - 1].letter.charCodeAt(0) + 1; k++) run.push(marks[k]);
  if (run.length < 2) return undefined;
  const out = new Map<string, string>();
  run.forEach((m, k) => {
    const end = k + 1 < run.length ? run[k + 1].start : t.length;
    const text = t.slice(m.end, end).replace(/\s+/g, ' ').replace(/(?:output format required:.*)$/i, '').replace(/[\s,;.?]+$/, '').trim();
    if (text && text.length <= 120) out.set(m.letter, text);
  });
  return out.size >= 2 ? out : undefined;
}

function unitOf(problem: string, t: string): UnitSpec | undefined {
  const explicit = /\(unit:\s*([^)]+)\)/i.exec(problem);
  if (explicit) return parseUnit(explicit[1]) ?? undefined;
  t = questionPart(t);
  const patterns = [
    /\bin\s+units\s+of\s+((?:square|cubic)\s+)?([a-z]+(?:\/[a-z]+)?)/,
    /\bhow\s+many\s+((?:square|cubic)\s+)?([a-z]+)/,
    /\b(?:express|give|write|answer)\b[^.?]*?\bin\s+((?:square|cubic)\s+)?([a-z]+(?:\/[a-z]+)?)/,
    /,\s*in\s+((?:square|cubic)\s+)?([a-z]+(?:\/[a-z]+)?)\s*[,?.]/,
    /\(\s*in\s+((?:square|cubic)\s+)?([a-z]+(?:\/[a-z]+)?)\s*\)/,
  ];
  for (const re of patterns) {
    const m = re.exec(t);
    if (!m) continue;
    const unit = parseUnit(`${m[1] ?? ''}${m[2]}`);
    if (unit) return unit;
  }
  return undefined;
}

const ORDERED = /\bvector\b|\brespectively\b|\bseparately\b|\brespective\b|\bin\s+(?:that|this|the\s+same|the\s+given|increasing|decreasing|ascending|descending)\s+order\b|\bpath\b/;

const INTERVAL = /\binterval\b|\brange\b|\bdomain\b|\bfor\s+which\s+values\b|\binequality\b/;

function askedVariableOf(text: string): string | undefined {
  const t = text.trim();
  const forX = /\bfor\s+\$?([a-zA-Z])\$?\s*[.?]?$/.exec(t);
  if (forX && /\b(?:solve|find|determine|compute)\b/i.test(t)) return forX[1];
  const find = /\b(?:find|determine|compute|calculate|what\s+is)\s+(?:the\s+value\s+of\s+)?\$?([a-zA-Z])\$?\s*[.?]$/i.exec(t);
  return find?.[1];
}

/**
 * Constants a problem defines in plain text (`Let w = (0 + -2)/2 - -4.`, `Let s be 207*-3*(-1)/12.`), in
 * order, each evaluated exactly with the earlier ones substituted; definitions that are not rational
 * constants (functions, derivatives, radicals) are skipped.
 */
function definitionsOf(problem: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!/\bLet\s+[a-zA-Z]\s*(?:=|be)\s/.test(problem)) return out;
  for (const m of problem.matchAll(/\bLet\s+([a-zA-Z])\s*(?:=|be)\s+([\s\S]+?)\.(?=\s|$)/g)) {
    if (out.size >= 32) break;
    let expr = m[2];
    if (!/^[-+*/().\d\sa-zA-Z]+$/.test(expr) || /[a-zA-Z]\s*\(/.test(expr)) continue;
    expr = expr.replace(/\b([a-zA-Z])\b/g, (name: string) => (out.has(name) ? `(${out.get(name)})` : name));
    if (/[a-zA-Z]/.test(expr)) continue;
    const latex = plainExpressionToLatex(expr);
    if (!latex) continue;
    try {
      const v = evaluate(parseLatex(latex));
      if (v.exact) out.set(m[1], v.exact.toString());
    } catch {
      // Not a constant the evaluator can compute exactly: left out.
    }
  }
  return out;
}

/** The question (its last sentence that asks) names several things: `x and y`, `a, b, c`, `respectively`, `each`. */
function severalUnknownsOf(t: string): boolean {
  const sentences = t.split(/(?<=[.?!])\s+/).filter((x) => x.trim());
  const question = [...sentences].reverse().find((x) => /\?\s*$|^(?:find|compute|determine|solve|enter|express|give|what|which|how|calculate)\b/.test(x.trim()));
  if (!question) return false;
  return /\band\b|\brespectively\b|\beach\b|\bboth\b|\bordered\s+(?:pair|triple)\b|\ball\b|\$?[a-z]\$?\s*,\s*\$?[a-z]\$?/.test(question);
}

/** LaTeX compared for restatement: no spaces, braces, `$`, sizing commands; `\dfrac` = `\frac`. */
export function compactLatex(s: string): string {
  return s
    .replace(/\\(?:left|right|displaystyle|[,;!:])(?![a-zA-Z])|\$/g, '')
    .replace(/\\[dt]frac/g, '\\frac')
    .replace(/[\s{}]/g, '');
}

/** The problem states this expression itself (a side of an answer that restates the question). */
export function restates(hints: ProblemHints | undefined, latex: string): boolean {
  if (!hints) return false;
  const c = compactLatex(latex);
  return c.length >= 2 && /[a-zA-Z\\]/.test(c) && hints.compact.includes(c);
}

const cache = new Map<string, ProblemHints>();
const CACHE_SIZE = 512;

/**
 * Reads the {@link ProblemHints} of a problem text. Pure; memoised (the rollouts of a group share their
 * problem). Texts longer than 20,000 characters are read from their last 4,000 (where the question is).
 */
export function problemHints(problem: string): ProblemHints {
  const hit = cache.get(problem);
  if (hit) return hit;
  const tail = problem.length > 20_000 ? problem.slice(-4000) : problem;
  const t = tail.toLowerCase().replace(/\s+/g, ' ');
  const hints: ProblemHints = { text: t, compact: compactLatex(tail), ...precisionOf(t) };
  const unit = unitOf(tail, t);
  if (unit) hints.unit = unit;
  const choices = choicesOf(tail);
  if (choices) hints.choices = choices;
  if (ORDERED.test(t)) hints.ordered = true;
  if (INTERVAL.test(t)) hints.interval = true;
  const definitions = definitionsOf(tail);
  if (definitions.size > 0) hints.definitions = definitions;
  const asked = askedVariableOf(tail);
  if (asked) hints.askedVariable = asked;
  if (severalUnknownsOf(t)) hints.severalUnknowns = true;
  const angle = /\bin\s+(radians|degrees)\b/.exec(t);
  if (angle) hints.angle = angle[1] as 'degrees' | 'radians';
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(problem, hints);
  return hints;
}
