import { matchBrace } from './answer.extractor';
import { braceDigitExponents, degreesInTrig, lineBreaksToRows, polarForms, repairMatrixRows } from './latex.rewrites';
import { replaceNumberWords } from './number-words';
import { plainTextToLatex } from './plain-text.converter';

/** A normalised answer string plus the annotations stripped from it (docs/design/grading.md rules 2, 4, 5). */
export interface NormalizedAnswer {
  /** The normalised LaTeX (no `$`, `\left`, spacing, text wrappers, units, `%`, degrees). */
  text: string;
  /** The answer carried `%` or the word `percent`. */
  percent: boolean;
  /** The answer carried `^\circ`, `°` or the word `degrees`. */
  degrees: boolean;
  /** Set when the answer was plain text (Python/sympy style) and was converted to LaTeX (rule `plain_text`). */
  plainText?: true;
  /** The unit words stripped after the value (`cm`, `hours`, `m/s`), kept for problem-aware unit conversion. */
  unit?: string;
}

const WRAPPERS = ['text', 'textbf', 'textit', 'textrm', 'textnormal', 'mathrm', 'mathbf', 'mathit', 'mbox', 'mathsf', 'boldsymbol', 'bm'];

const TEXT_WRAPPERS = /^\\(?:text|textrm|textnormal|mbox)\s*\{$/;

/** Replaces `\cmd{X}` with X for each wrapper; words keep spaces around them so they stay separate tokens. */
function unwrapText(s: string): string {
  const re = new RegExp(`\\\\(?:${WRAPPERS.join('|')})\\s*\\{`, 'g');
  for (let guard = 0; guard < 50; guard++) {
    re.lastIndex = 0;
    const m = re.exec(s);
    if (!m) break;
    const open = m.index + m[0].length - 1;
    const close = matchBrace(s, open);
    if (close < 0) break;
    const inner = s.slice(open + 1, close);
    // Words (and a unit letter in a text box, `144\mbox{m}^3`) keep spaces around them.
    const wordy = (/[a-zA-Z]{2,}/.test(inner) && !inner.trim().startsWith('\\')) || (TEXT_WRAPPERS.test(m[0]) && /^\s*[a-zA-Z]\s*$/.test(inner));
    s = s.slice(0, m.index) + (wordy ? ` ${inner} ` : inner) + s.slice(close + 1);
  }
  return s;
}

/** Unit words (and the single-letter units) stripped as whole words after a value; no conversion. */
const UNIT_TAIL =
  /^(.*?[\d}).!a-zA-Z\\])\s+((?:(?:square|sq|cubic|sq\.)\s+)?(?:[a-zA-Z]{2,}|[mgsLlhK])(?:\s*\^\s*\{?[23]\}?)?(?:\s+per\s+[a-zA-Z]+|\s*\/\s*[a-zA-Z]+)?(?:\s+[a-zA-Z]{2,})*)\s*$/;
const NOT_UNITS = new Set([
  'or', 'and', 'odd', 'even', 'none', 'no', 'yes', 'true', 'false', 'undefined', 'infinite', 'is',
  // Words that qualify a value are not its unit (`36 approx.` is not a plain 36).
  'approx', 'approximately', 'about', 'around', 'roughly', 'nearly', 'almost', 'maybe', 'perhaps', 'possibly', 'probably', 'or', 'not',
]);

function stripUnits(s: string): { text: string; unit: string | null } {
  // The tail pattern is quadratic in the worst case; units follow short answers only.
  if (s.length > 200) return { text: s, unit: null };
  const m = UNIT_TAIL.exec(s);
  if (!m) return { text: s, unit: null };
  const head = m[1].trim();
  // `-48 \cdot g`: a letter after an operator is a factor, not a unit.
  if (/(?:\\(?:cdot|times|div|pm|mp)|[-+*/=^(])$/.test(head)) return { text: s, unit: null };
  const words = m[2].split(/\s+/).map((w) => w.replace(/\^.*$/, '').toLowerCase());
  if (words.some((w) => NOT_UNITS.has(w))) return { text: s, unit: null };
  // Only strip when what remains is a value: it has a digit or a closing bracket and no word of its own.
  // A sentence keeps its words (the phrase rule reads it whole).
  if (!/[\d)}]/.test(head) || /(^|[^\\a-zA-Z])[a-zA-Z]{3,}/.test(head)) return { text: s, unit: null };
  return { text: head, unit: m[2].trim() };
}

/** Drops one pair of braces that wraps the whole string (`{2}` -> `2`). */
function stripOuterBraces(s: string): string {
  while (s.startsWith('{') && matchBrace(s, 0) === s.length - 1) s = s.slice(1, -1).trim();
  return s;
}

/**
 * docs/design/grading.md rule 2 (+ the stripping parts of rules 4 and 5): drops `\left`/`\right`, `\displaystyle`,
 * spacing commands, text wrappers, `$`, a trailing period, unambiguous thousands separators (`{,}`,
 * `,\!`, thin spaces between digit groups), `\$`, `%` and degree marks (recorded as flags), and unit words
 * after a value. Pure and bounded (linear in the input).
 */
export function normalizeLatex(input: string): NormalizedAnswer {
  let s = input;
  let percent = false;
  let degrees = false;
  const plain = plainTextToLatex(s);
  if (plain !== null) s = plain;
  // `inf`, `infinity` (plain text, numpy) are the symbol.
  s = s.replace(/^\s*([+-]?)\s*(?:inf|infinity)\s*$/i, '$1\\infty');
  s = lineBreaksToRows(s);
  s = s.replace(/\$/g, ' ');
  // GSM8K's calculator notes (`12*5=<<12*5=60>>60`) repeat a step; `≈` is `\approx`.
  s = s.replace(/<<[^<>]{0,200}>>/g, ' ').replace(/≈/g, ' \\approx ');
  s = s.replace(/\\(?:displaystyle|textstyle|scriptstyle)\b/g, ' ');
  s = s.replace(/\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)(?![a-zA-Z])\s*\.?/g, '');
  s = s.replace(/\\langle(?![a-zA-Z])/g, '(').replace(/\\rangle(?![a-zA-Z])/g, ')');
  s = s.replace(/\\(?:lor|vee)(?![a-zA-Z])/g, ' \\text{ or } ').replace(/\\land(?![a-zA-Z])/g, ' \\text{ and } ');
  s = braceDigitExponents(s);
  s = polarForms(degreesInTrig(s));
  s = s.replace(/\\[dtc]frac(?![a-zA-Z])/g, '\\frac');
  s = repairMatrixRows(s);
  // A braced argument that is one number with d,ddd groups (`\frac{12}{5,525}`) is that number.
  s = s.replace(/\{\s*(\d{1,3}(?:,\d{3})+)\s*\}/g, (_m, n: string) => `{${n.replace(/,/g, '')}}`);
  // Thousands separators that cannot be a list (rule 4).
  s = s.replace(/(\d)\s*(?:\{,\}|,\s*\\!)\s*(?=\d{3}(?!\d))/g, '$1');
  // `{,}` between digits that are not a d,ddd group is a decimal comma (`1{,}5` = 1.5).
  s = s.replace(/(\d)\{,\}(?=\d)/g, '$1.');
  s = s.replace(/(\d)(?:\\,|\\ |\\;|\u2009|\u202f)(?=\d{3}(?!\d))/g, '$1');
  s = unwrapText(s);
  s = s.replace(/\\\\|\\(?:!|,|;|:| |quad|qquad)/g, (m) => (m === '\\\\' ? m : ' ')).replace(/~/g, ' ');
  s = replaceNumberWords(s);
  s = s.replace(/\\\$|\\?\bUSD\b|€|£/g, ' ');
  if (/\\%|%/.test(s)) {
    percent = true;
    s = s.replace(/\\%|%/g, ' ');
  }
  if (/\^\s*\{?\s*\\circ\s*\}?|°|\\degree|\\circ/.test(s)) {
    degrees = true;
    s = s.replace(/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|\\degree|\\circ/g, ' ');
  }
  s = s.replace(/\\(?:geqslant|geq|ge)(?![a-zA-Z])/g, '\\geq ').replace(/\\(?:leqslant|leq|le)(?![a-zA-Z])/g, '\\leq ');
  s = s.replace(/\\(?:neq|ne)(?![a-zA-Z])/g, '\\neq ').replace(/≤/g, '\\leq ').replace(/≥/g, '\\geq ').replace(/≠/g, '\\neq ');
  s = s.replace(/\\(?:varnothing|O)(?![a-zA-Z])|∅/g, '\\emptyset ').replace(/\\lt(?![a-zA-Z])/g, '<').replace(/\\gt(?![a-zA-Z])/g, '>');
  s = s.replace(/\s+/g, ' ').trim();
  s = s.replace(/[.。]+$/, '').trim();
  const pctWord = /\s+percent$/i.exec(s);
  if (pctWord) {
    percent = true;
    s = s.slice(0, pctWord.index).trim();
  }
  const degWord = /\s+deg(?:rees?)?$/i.exec(s);
  if (degWord) {
    degrees = true;
    s = s.slice(0, degWord.index).trim();
  }
  s = s.replace(/(\d)\s*\{\s*([a-zA-Z]{2,})\s*\}$/, '$1 $2');
  const stripped = stripUnits(s);
  s = stripOuterBraces(stripped.text);
  s = s.replace(/\s*([\^_])\s*\{\s*([a-zA-Z0-9])\s*\}/g, '$1$2');
  s = s.replace(/\s+/g, ' ').replace(/([([{])\s+/g, '$1').replace(/\s+([)\]}])/g, '$1').trim();
  // Row breaks at the very start or end separate nothing.
  s = s.replace(/^(?:\\\\\s*)+|(?:\s*\\\\)+$/g, '').trim();
  const out: NormalizedAnswer = { text: s, percent, degrees };
  if (plain !== null) out.plainText = true;
  if (stripped.unit !== null) out.unit = stripped.unit;
  return out;
}
