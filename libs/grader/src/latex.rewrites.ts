import { matchBrace } from './answer.extractor';

/**
 * Rewrites of answer LaTeX that the normaliser applies before parsing (GRADING-RULES.md): line breaks
 * as rows, exponents of several digits, degrees inside trigonometric functions, polar forms of complex
 * numbers. Each is pure and linear in the input.
 */

/** Where `s[i]` is an opening bracket, the index of its matching closer (same kind), or -1. */
function matchParen(s: string, i: number): number {
  const open = s[i];
  const close = open === '(' ? ')' : open === '[' ? ']' : '}';
  let depth = 0;
  for (let k = i; k < s.length; k++) {
    if (s[k] === '\\') {
      k++;
      continue;
    }
    if (s[k] === open) depth++;
    else if (s[k] === close && --depth === 0) return k;
  }
  return -1;
}

/**
 * The argument that follows position `i` (a function's operand written without parentheses or with
 * them): `(..)`, `{..}`, `\frac{..}{..}`, `\cmd{..}`, a number with an optional degree mark, or a
 * letter. Returns `[argument, end]` or null.
 */
export function takeArgument(s: string, i: number): [string, number] | null {
  while (s[i] === ' ') i++;
  const c = s[i];
  if (c === '(' || c === '{' || c === '[') {
    const end = matchParen(s, i);
    return end < 0 ? null : [s.slice(i + 1, end), end + 1];
  }
  if (c === '\\') {
    const cmd = /^\\[a-zA-Z]+/.exec(s.slice(i));
    if (!cmd) return null;
    let end = i + cmd[0].length;
    const arity = cmd[0] === '\\frac' ? 2 : cmd[0] === '\\sqrt' ? 1 : 0;
    for (let a = 0; a < arity; a++) {
      while (s[end] === ' ') end++;
      if (s[end] !== '{') return null;
      const close = matchBrace(s, end);
      if (close < 0) return null;
      end = close + 1;
    }
    return [s.slice(i, end), end];
  }
  const num = /^(?:\d+(?:\.\d+)?|[a-zA-Z])/.exec(s.slice(i));
  return num ? [num[0], i + num[0].length] : null;
}

/** Literal line breaks, `\newline` and `\cr` outside `\begin..\end` become row breaks `\\`. */
export function lineBreaksToRows(s: string): string {
  s = s.replace(/\\(?:newline|cr)(?![a-zA-Z])/g, ' \\\\ ');
  if (!s.includes('\n')) return s;
  let depth = 0;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s.startsWith('\\begin{', i)) depth++;
    else if (s.startsWith('\\end{', i)) depth = Math.max(0, depth - 1);
    const c = s[i];
    out += c === '\n' ? (depth === 0 ? ' \\\\ ' : ' ') : c;
  }
  return out;
}

/** `2^10` means 2^{10} (nobody writes 2^1 * 0): an unbraced exponent of several digits is braced. */
export function braceDigitExponents(s: string): string {
  return s.replace(/\^\s*(\d{2,})/g, '^{$1}');
}

const TRIG = /\\(?:sin|cos|tan|sec|csc|cot)(?![a-zA-Z])|\\operatorname\{cis\}|(?:^|[^a-zA-Z\\])cis(?![a-zA-Z])|[\d}]\s*\\angle/;

/**
 * Inside trigonometric functions and polar forms a degree mark is a unit of angle: `\sin 30^\circ` is
 * `\sin(\frac{30\pi}{180})`. Only when the answer has such a function (elsewhere `^\circ` is stripped,
 * rule 5).
 */
export function degreesInTrig(s: string): string {
  if (!TRIG.test(s)) return s;
  return s.replace(/(\d+(?:\.\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z]))/g, '(\\frac{$1\\pi}{180})');
}

/**
 * Polar forms of a complex number as exponentials: `r\operatorname{cis}\theta` / `r\,\text{cis}(\theta)`
 * and `r\angle\theta` (a number before `\angle`, not an angle's name) -> `r e^{i(\theta)}`.
 */
export function polarForms(s: string): string {
  if (!/cis|\\angle/.test(s)) return s;
  let out = s.replace(/\\operatorname\s*\{\s*cis\s*\}|\\(?:mathrm|text)\s*\{\s*cis\s*\}/g, ' cis ');
  const rewrite = (re: RegExp): void => {
    for (let guard = 0; guard < 8; guard++) {
      const m = re.exec(out);
      if (!m) return;
      const start = m.index + m[0].length;
      const arg = takeArgument(out, start);
      if (!arg) return;
      out = `${out.slice(0, m.index)}${m[1] ?? ''} e^{i(${arg[0]})}${out.slice(arg[1])}`;
    }
  };
  rewrite(/(^|[^a-zA-Z\\])cis(?![a-zA-Z])\s*/);
  rewrite(/([\d}])\s*\\angle\s*/);
  return out;
}

/**
 * Golds whose row breaks lost a backslash when a pipeline stripped spaces (`\begin{pmatrix}-6\6\end{pmatrix}`,
 * MathCoder's MATH golds): inside a matrix, a single backslash before a digit or a sign is a row break.
 */
export function repairMatrixRows(s: string): string {
  if (!/\\begin\{[pbvBV]?matrix\}/.test(s)) return s;
  return s.replace(/(\\begin\{([pbvBV]?matrix)\})(.*?)(\\end\{\2\})/gs, (_m, open: string, _env: string, body: string, close: string) =>
    open + body.replace(/(?<!\\)\\(?=\s*[-+\d.])/g, '\\\\') + close,
  );
}
