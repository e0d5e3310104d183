import { GraderError } from './errors';

/** A parsed answer (the structures of docs/design/grading.md rules 7-9); leaves keep their normalised LaTeX. */
export type AnswerNode =
  | { kind: 'expr'; latex: string }
  /** Prose; `raw` keeps the normalised text (numbers and all) for the phrase rule. */
  | { kind: 'text'; words: string; raw: string }
  | { kind: 'choice'; letter: string }
  | { kind: 'base'; digits: string; base: number | null }
  /** Unordered: solutions, a `\{..\}` set, a `\pm` expansion. */
  | { kind: 'list'; items: AnswerNode[]; braces: boolean; rows?: true }
  /** Ordered, in brackets: `(a, b, c)`; `paren` = 2-element `( , )` (tuple or open interval). */
  | { kind: 'tuple'; items: AnswerNode[]; open: string; close: string }
  | { kind: 'union'; parts: AnswerNode[] }
  | { kind: 'matrix'; rows: AnswerNode[][]; scale: string | null; latex: string }
  | { kind: 'relation'; ops: string[]; sides: AnswerNode[] }
  /** `a : b : c`, equal to another ratio up to a common non-zero factor. */
  | { kind: 'ratio'; parts: AnswerNode[] }
  | { kind: 'reals' }
  | { kind: 'empty' };

const OPENERS = '([{';
const CLOSERS = ')]}';

/** Splits at top-level occurrences of `sep` (a regex matched at each position), ignoring nested brackets. */
export function splitTopLevel(s: string, sep: RegExp): string[] {
  return splitWithSeparators(s, sep).parts;
}

/** The top-level separators `sep` matched in `s`, in order. */
function separatorsOf(s: string, sep: RegExp): string[] {
  return splitWithSeparators(s, sep).seps.map((x) => x.trim());
}

function splitWithSeparators(s: string, sep: RegExp): { parts: string[]; seps: string[] } {
  const parts: string[] = [];
  const seps: string[] = [];
  let depth = 0;
  let last = 0;
  const sticky = new RegExp(sep.source, 'y');
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') {
      if (s.startsWith('\\{', i) || s.startsWith('\\}', i)) {
        depth += s[i + 1] === '{' ? 1 : -1;
        i++;
        continue;
      }
      if (depth === 0) {
        sticky.lastIndex = i;
        const m = sticky.exec(s);
        if (m && m[0].length > 0) {
          parts.push(s.slice(last, i));
          seps.push(m[0]);
          last = i + m[0].length;
          i = last - 1;
          continue;
        }
      }
      const cmd = /^\\[a-zA-Z]+/.exec(s.slice(i));
      if (cmd) i += cmd[0].length - 1;
      continue;
    }
    if (OPENERS.includes(c)) depth++;
    else if (CLOSERS.includes(c)) depth--;
    else if (depth === 0) {
      sticky.lastIndex = i;
      const m = sticky.exec(s);
      if (m && m[0].length > 0) {
        parts.push(s.slice(last, i));
        seps.push(m[0]);
        last = i + m[0].length;
        i = last - 1;
      }
    }
  }
  parts.push(s.slice(last));
  return { parts: parts.map((p) => p.trim()), seps };
}

const FUNCTION_WORDS = /\\?(?:sin|cos|tan|sec|csc|cot|log|ln|exp|sqrt|frac|arcsin|arccos|arctan|sinh|cosh|tanh|pi|infty|pm|cdot|times|mathbb|begin|end|pmatrix|bmatrix|matrix|array|binom|emptyset|cup|cap|leq|geq|neq|approx|in|min|max|gcd|lcm|ldots|cdots|dots|circ|mid|quad|det|deg|mod|pmod|bmod|boxed|sum|prod|int|lim|infty|to)\b/g;

/** The answer is prose: a word of 3+ letters that is not a LaTeX command or function name. */
function isText(s: string): boolean {
  const stripped = s.replace(FUNCTION_WORDS, ' ').replace(/\\[a-zA-Z]+/g, ' ');
  return /(^|[^a-zA-Z\\])[a-zA-Z]{3,}/.test(stripped) || /^[a-zA-Z]{2,}$/.test(s.trim());
}

/** Lower-case words with articles and punctuation dropped (rule 9). */
export function normalizeWords(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9\s-]/g, ' ')
    .split(/\s+/)
    .filter((w) => w && !['a', 'an', 'the'].includes(w))
    .join(' ');
}

const RELATION = /(\\leq|\\geq|\\neq|\\approx|<|>|=|\\in(?![a-zA-Z])|\\equiv(?![a-zA-Z]))/;
const LIST_SEP = /(?:,|;|\s+and\s+|\s+or\s+)/;

function isWrapped(s: string, open: string, close: string): boolean {
  if (!s.startsWith(open) || !s.endsWith(close)) return false;
  if (open === '\\{') {
    // Escaped braces: depth counts `\{` / `\}` only.
    let depth = 0;
    for (let i = 0; i < s.length; i++) {
      if (s.startsWith('\\{', i)) depth++;
      else if (s.startsWith('\\}', i)) depth--;
      else continue;
      i++;
      if (depth === 0 && i < s.length - 1) return false;
    }
    return depth === 0;
  }
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    if (OPENERS.includes(s[i])) depth++;
    else if (CLOSERS.includes(s[i])) depth--;
    if (depth === 0 && i < s.length - 1) return false;
  }
  return true;
}

function parseMatrix(s: string): AnswerNode | null {
  const m = /^(.*?)\s*\\begin\{([pbvBV]?matrix|array)\}(?:\{[^}]*\})?(.*)\\end\{\2\}$/s.exec(s);
  if (!m) {
    const wrapped = /^\[\s*(\\begin\{array\}.*\\end\{array\})\s*\]$/s.exec(s) ?? /^\(\s*(\\begin\{array\}.*\\end\{array\})\s*\)$/s.exec(s);
    return wrapped ? parseMatrix(wrapped[1]) : null;
  }
  // One matrix literal only: `A + B`, `A B` or `A^{-1}` are matrix expressions (evaluated elsewhere).
  if (/\\(?:begin|end)\{/.test(m[1]) || /\\(?:begin|end)\{/.test(m[3]) || /[=<>]|\\(?:leq|geq|neq|approx|in)(?![a-zA-Z])/.test(m[1])) return null;
  const rawScale = m[1].trim();
  const scale = rawScale === '-' ? '-1' : rawScale === '+' || rawScale === '' ? null : rawScale;
  const rows = m[3]
    .split(/\\\\/)
    .map((r) => r.trim())
    .filter((r) => r.length > 0)
    .map((r) => r.split('&').map((c) => parseAnswer(c.trim())));
  if (rows.length === 0) return null;
  return { kind: 'matrix', rows, scale, latex: s };
}

/**
 * Parses a normalised answer into an {@link AnswerNode} (docs/design/grading.md rules 7-9): choices, prose, base-n
 * numbers, matrices, unions, sets, tuples/intervals, relations (`=`, inequalities, `\in`, ratios),
 * lists of solutions (`,`, `and`, `or`), `\pm`, and otherwise an expression leaf.
 * Throws `GraderError('unparseable')` on an empty answer.
 */
export function parseAnswer(input: string): AnswerNode {
  const s = input.trim();
  if (!s) throw new GraderError('unparseable', 'empty answer');
  if (/^\\mathbb\s*\{?R\}?$/.test(s) || s === '\\R') return { kind: 'reals' };
  if (/^(\\emptyset|\\\{\s*\\\})$/.test(s)) return { kind: 'empty' };
  const choice = /^\(([A-Ea-e])\)$|^([A-E])$|^([A-Ea-e])\)$/.exec(s);
  if (choice) return { kind: 'choice', letter: (choice[1] ?? choice[2] ?? choice[3]).toUpperCase() };
  const base = /^([0-9A-Fa-f]+)_\{?(\d+)\}?$/.exec(s);
  if (base) return { kind: 'base', digits: base[1].toUpperCase(), base: Number(base[2]) };
  const matrix = parseMatrix(s);
  if (matrix) return matrix;
  const stacked = unwrapStackedEnvironment(s);
  if (stacked !== null) return parseAnswer(stacked);
  // Several rows (`x = 3 \\ x = 6`, line breaks): each row is one item; a hedge unless they agree.
  const rows = splitRows(s);
  if (rows.length > 1) return { kind: 'list', items: rows.map(parseAnswer), braces: false, rows: true };

  const unionParts = splitTopLevel(s, /\\cup(?![a-zA-Z])/);
  if (unionParts.length > 1) return { kind: 'union', parts: unionParts.map(parseAnswer) };

  // A number with d,ddd thousands groups is one number, not a list.
  if (/^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) return { kind: 'expr', latex: s.replace(/,/g, '') };

  let listParts = splitTopLevel(s, /,|;/);
  if (listParts.length === 1) {
    // `and` / `or` join solutions only between mathematical items (not inside a sentence).
    const words = splitTopLevel(s, /\s+(?:and|or)\s+/);
    if (words.length > 1 && words.every((w) => !isText(w))) listParts = words;
  }
  if (listParts.length > 1 && listParts.every((p) => p.length > 0)) {
    return { kind: 'list', items: listParts.map(parseAnswer), braces: false };
  }

  const rel = splitTopLevel(s, RELATION);
  if (rel.length > 1) {
    const ops = separatorsOf(s, RELATION);
    if (rel.some((p) => p.length === 0)) throw new GraderError('unparseable', `incomplete relation "${s}"`);
    return { kind: 'relation', ops, sides: rel.map(parseAnswer) };
  }
  const ratio = splitTopLevel(s, /:/);
  if (ratio.length >= 2) {
    if (ratio.some((p) => p.length === 0)) throw new GraderError('unparseable', `incomplete ratio "${s}"`);
    return { kind: 'ratio', parts: ratio.map(parseAnswer) };
  }

  if (isWrapped(s, '\\{', '\\}')) {
    const inner = s.slice(2, -2).trim();
    const items = inner ? splitTopLevel(inner, LIST_SEP).map(parseAnswer) : [];
    return { kind: 'list', items, braces: true };
  }
  const bracket = /^[([]/.test(s) && /[)\]]$/.test(s) && isWrapped(s, s[0], s[s.length - 1]);
  if (bracket) {
    const inner = s.slice(1, -1);
    const items = splitTopLevel(inner, /,/);
    if (items.length > 1) return { kind: 'tuple', items: items.map(parseAnswer), open: s[0], close: s[s.length - 1] };
    if (s[0] === '(' && s.endsWith(')')) return parseAnswer(inner);
  }
  if (/\\pm(?![a-zA-Z])/.test(s)) {
    if (/\\pm.*\\pm/.test(s)) throw new GraderError('unparseable', 'more than one \\pm');
    const plus = s.replace(/\\pm(?![a-zA-Z])/, '+').replace(/^\+/, '');
    const minus = s.replace(/\\pm(?![a-zA-Z])/, '-');
    return { kind: 'list', items: [parseAnswer(plus), parseAnswer(minus)], braces: false };
  }
  if (/\\ldots|\\cdots|\\dots|\.\.\./.test(s)) throw new GraderError('unparseable', `open-ended answer "${s}"`);
  if (isText(s)) return { kind: 'text', words: normalizeWords(s), raw: s };
  // Numbers side by side with only a space between (`3 6`, from `3 \\; 6` or `3~6`) are two values,
  // not 36; `2 1/2` (a mixed number) and `12 345` (thin-space thousands) stay one value.
  if (/^[+-]?\d*\.?\d+(?:\s+[+-]?\d*\.?\d+)+$/.test(s) && !/^[+-]?\d{1,3}(?: \d{3})+(?:\.\d+)?$/.test(s)) {
    return { kind: 'list', items: s.split(/\s+/).map(parseAnswer), braces: false };
  }
  return { kind: 'expr', latex: s };
}

/** `\begin{aligned|cases|gathered|align*|split}..\end{..}` around the whole answer: its rows, `&` dropped. */
function unwrapStackedEnvironment(s: string): string | null {
  const m = /^\\begin\{(aligned|align\*?|cases|gathered|gather\*?|split|eqnarray\*?)\}(.*)\\end\{\1\}$/s.exec(s);
  return m ? m[2].replace(/&/g, ' ').trim() : null;
}

/** Splits at row breaks `\\` outside brackets and `\begin..\end` environments. */
export function splitRows(s: string): string[] {
  if (!s.includes('\\\\')) return [s];
  const rows: string[] = [];
  let env = 0;
  let depth = 0;
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    if (s.startsWith('\\begin{', i)) env++;
    else if (s.startsWith('\\end{', i)) env--;
    else if (s.startsWith('\\\\', i)) {
      if (env === 0 && depth === 0) {
        rows.push(s.slice(last, i));
        last = i + 2;
      }
      i++;
      continue;
    } else if (s[i] === '\\') {
      i++;
      continue;
    } else if (OPENERS.includes(s[i])) depth++;
    else if (CLOSERS.includes(s[i])) depth--;
  }
  rows.push(s.slice(last));
  return rows.map((r) => r.trim()).filter((r) => r.length > 0);
}

/** A readable canonical form of a parsed answer (what a rule compared), for `rstar grade --explain`. */
export function describeNode(n: AnswerNode): string {
  switch (n.kind) {
    case 'expr':
      return n.latex;
    case 'text':
      return `text "${n.words}"`;
    case 'choice':
      return `choice ${n.letter}`;
    case 'base':
      return n.base === null ? n.digits : `${n.digits}_${n.base}`;
    case 'list':
      return n.braces ? `set {${n.items.map(describeNode).join(', ')}}` : `list [${n.items.map(describeNode).join(', ')}]`;
    case 'tuple':
      return `${n.open}${n.items.map(describeNode).join(', ')}${n.close}`;
    case 'union':
      return n.parts.map(describeNode).join(' \\cup ');
    case 'matrix':
      return `matrix ${n.scale ? `${n.scale} * ` : ''}[${n.rows.map((r) => `[${r.map(describeNode).join(', ')}]`).join(', ')}]`;
    case 'relation':
      return n.sides.map((s, i) => (i === 0 ? describeNode(s) : `${n.ops[i - 1]} ${describeNode(s)}`)).join(' ');
    case 'ratio':
      return `ratio ${n.parts.map(describeNode).join(' : ')}`;
    case 'reals':
      return '\\mathbb{R}';
    case 'empty':
      return '\\emptyset';
  }
}
