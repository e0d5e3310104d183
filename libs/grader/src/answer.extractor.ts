/** Where `text[open]` is `{`, the index of its matching `}`, or -1 when unbalanced. */
export function matchBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

interface Box {
  start: number;
  end: number;
  content: string;
}

/** Every `\boxed{..}`, `\fbox{..}` and `\boxed x` in order; `null` when a box is unbalanced (no answer). */
function findBoxes(text: string): Box[] | null {
  const boxes: Box[] = [];
  const re = /\\(?:boxed|fbox)(?![a-zA-Z])/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    let i = m.index + m[0].length;
    while (text[i] === ' ' && text[i + 1] !== '{') i++;
    if (text[i] === ' ' && text[i + 1] === '{') i++;
    if (text[i] === '{') {
      const close = matchBrace(text, i);
      if (close < 0) return null;
      boxes.push({ start: m.index, end: close + 1, content: text.slice(i + 1, close) });
      re.lastIndex = close + 1;
    } else if (text[m.index + m[0].length] === ' ') {
      // `\boxed 5`: the box holds the next token (up to whitespace, `$` or sentence punctuation).
      const tok = /^ +([^\s$]+?)[.,;]?(?=\s|\$|$)/.exec(text.slice(m.index + m[0].length));
      if (tok) boxes.push({ start: m.index, end: m.index + m[0].length + tok[0].length, content: tok[1] });
    }
  }
  return boxes;
}

/**
 * What separates two boxes that belong to one answer: `,`, `;` or `and` (with math delimiters and
 * spaces), optionally followed by the next unknown's name (`$x = \boxed{3}$ and $y = \boxed{5}$`).
 */
const JOINER = /^[\s$]*(,|;|and|\\text\{\s*and\s*\}|\\quad)[\s$]*(?:\\?[a-zA-Z]+(?:_\{?\w+\}?)?\s*=\s*)?[\s$]*$/;
/** Two boxes joined by `or` (`or maybe`, `alternatively`) are a hedge; kept together so the list rule marks them wrong. */
const HEDGE = /^[\s$,]*(?:\\text\{\s*)?(?:or|or\s+(?:maybe|perhaps|possibly)|maybe|perhaps|possibly|alternatively)(?:\s*\})?[\s$,]*$/i;
/** The name an answer box is given just before it (`x = \boxed{3}`, `$y=$ \boxed{5}`). */
const LABEL_BEFORE = /(?:^|[^a-zA-Z\\])(\\?[a-zA-Z]+(?:_\{?\w+\}?)?)\s*=\s*\$?\s*$/;
/** Words that withdraw an earlier box: boxes around them are not several parts of one answer. */
const RETRACTION = /\b(?:wait|wrong|mistake|actually|instead|correct(?:ion|ed)?|re-?check|however|but|oops|error|sorry|revis|recalculat|again|not|no)\b/i;
/** What may stand between the parts of one answer: prose, math delimiters, names, units (no junk like `++++`). */
const PROSE = /^[\sA-Za-z0-9$,.;:()'"=\\{}^_-]*$/;

const MARKERS: RegExp[] = [
  /final answer\s*(?:is)?\s*[:：]?\s*(.+)$/gim,
  /^\s*(?:\*\*)?answer(?:\*\*)?\s*[:：]\s*(.+)$/gim,
  /the (?:final |correct )?answer is\s*[:：]?\s*(.+)$/gim,
  /####\s*(.+)$/gm,
];

function cleanMarked(s: string): string | null {
  let t = s.trim().split('\n')[0].trim();
  // The sentence ends at a full stop before a space (not a decimal point) or at a trailing clause.
  t = t.replace(/\.\s+\S.*$/, '').replace(/,\s+(?:which|since|because|so|as|and\s+(?:this|that|the))\b.*$/i, '');
  t = t.replace(/^\*+|\*+$/g, '').trim();
  t = t.replace(/[.。]\s*$/, '').trim();
  t = t.replace(/^\$+|\$+$/g, '').trim();
  t = t.replace(/^\\[([]\s*|\s*\\[)\]]$/g, '').trim();
  t = t.replace(/^\*+|\*+$/g, '').trim();
  return t.length > 0 ? t : null;
}

/** `The answer is`, `So the final answer is:`, `Answer:` at the start of an answer (in a `\text{}` or not). */
const LEADING_MARKER =
  /^\s*(?:\\(?:text|textbf|textrm|mathrm|mbox)\s*\{\s*)?(?:(?:so|thus|therefore|hence)\s*,?\s+)?(?:the\s+)?(?:final\s+|correct\s+)?answer\s*(?:is\s*:?|:)\s*(\}\s*)?/i;

/**
 * An answer without the phrase that introduces it (`The answer is 12 * 5 / 4 = 15` -> `12 * 5 / 4 = 15`):
 * what a model writes inside a box or a source records as its answer. Unchanged when nothing follows.
 */
export function stripAnswerMarker(answer: string): string {
  const m = LEADING_MARKER.exec(answer);
  if (!m) return answer;
  const rest = answer.slice(m[0].length);
  // The phrase opened a `\text{` that goes on after it (`\text{The answer is 15}`): keep the brace balanced.
  const opened = /^\s*\\[a-z]+\s*\{/i.test(answer) && !m[1];
  const out = opened ? `\\text{${rest}` : rest;
  return out.trim() ? out : answer;
}

/** The region an answer may come from: inside the last `<answer>` block, else after the last `</think>`. */
function answerRegion(text: string): string {
  const close = text.lastIndexOf('</answer>');
  const open = text.lastIndexOf('<answer>', close >= 0 ? close : undefined);
  if (open >= 0) return text.slice(open + '<answer>'.length, close > open ? close : undefined);
  const think = text.lastIndexOf('</think>');
  return think >= 0 ? text.slice(think + '</think>'.length) : text;
}

/**
 * The contents of the last `n` boxes of a response when they read as the parts of one answer (problem
 * with several unknowns, rule `multi_box`): each within 200 characters of the next and no words between
 * them that withdraw the earlier one (`wait`, `wrong`, `actually`, ...). Null otherwise.
 */
export function lastBoxes(text: string, n: number): string[] | null {
  if (typeof text !== 'string' || n < 2) return null;
  const region = answerRegion(text);
  const boxes = findBoxes(region);
  if (!boxes || boxes.length < n) return null;
  const last = boxes.slice(-n);
  for (let k = 1; k < last.length; k++) {
    const between = region.slice(last[k - 1].end, last[k].start);
    if (between.length > 200 || !PROSE.test(between) || RETRACTION.test(between) || HEDGE.test(between) || /\bor\b/i.test(between)) return null;
  }
  if (last.some((b) => b.content.trim() === '' || /\\(?:boxed|fbox)/.test(b.content))) return null;
  return last.map((b) => b.content.trim());
}

/**
 * Extracts the final answer of a model response (docs/design/grading.md rule 1): the last balanced `\boxed{...}`
 * (also `\boxed x`, `\fbox{...}`) after the last `</think>` or inside the last `<answer>` block;
 * adjacent boxes joined only by `,` / `and` form one list (`a, b`); boxes joined by `or` are returned
 * as `a \text{ or } b` (a hedge, graded wrong). Without a box only an explicit marker counts
 * (`Final Answer:`, `Answer:`, `the answer is`, `####`), never the last number of the text.
 * Returns null when there is no answer, the last box is empty, or a box is unbalanced.
 */
export function extractAnswer(text: string): string | null {
  if (typeof text !== 'string' || text.length === 0) return null;
  const region = answerRegion(text);
  const boxes = findBoxes(region);
  if (boxes === null) return null;
  if (boxes.length > 0) {
    let first = boxes.length - 1;
    let hedged = false;
    for (let k = boxes.length - 1; k > 0; k--) {
      const between = region.slice(boxes[k - 1].end, boxes[k].start);
      if (JOINER.test(between)) first = k - 1;
      else if (HEDGE.test(between)) {
        first = k - 1;
        hedged = true;
      } else break;
    }
    const group = boxes.slice(first);
    if (group.some((g) => g.content.trim() === '')) return null;
    // A box inside the box (`\boxed{\boxed{8}}`) holds the same answer.
    const inner = (g: string): string => (/\\(?:boxed|fbox)(?![a-zA-Z])/.test(g) ? (extractAnswer(g) ?? g) : g);
    // Several named boxes keep their names (`x = 3, y = 5`), so each unknown is matched by name.
    const labels = group.length > 1 ? group.map((b) => LABEL_BEFORE.exec(region.slice(Math.max(0, b.start - 40), b.start))?.[1] ?? null) : [];
    const named = labels.length > 1 && labels.every((l) => l !== null) && new Set(labels).size === labels.length;
    const parts = group.map((g, k) => (named ? `${labels[k]} = ${inner(g.content.trim())}` : inner(g.content.trim())));
    return parts.join(hedged ? ' \\text{ or } ' : ', ');
  }
  // The marker that occurs last wins (a solution may restate its answer after a first attempt).
  let best: { at: number; answer: string } | null = null;
  for (const re of MARKERS) {
    for (const m of region.matchAll(re)) {
      const ans = cleanMarked(m[1]);
      if (ans && (!best || m.index > best.at)) best = { at: m.index, answer: ans };
    }
  }
  return best ? best.answer : null;
}
