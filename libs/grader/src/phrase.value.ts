import { parseAnswer, type AnswerNode } from './answer.parser';
import type { ProblemHints } from './problem.hints';

/** Words that make a phrase's number not (only) the answer: a range, a bound, a negation, a hedge. */
const QUALIFIERS =
  /\b(?:or|either|between|at\s+least|at\s+most|more\s+than|less\s+than|fewer\s+than|greater\s+than|up\s+to|not|no|never|none|cannot|can't|isn't|maybe|perhaps|possibly|probably|approximately|approx|about|around|roughly|nearly|almost|over|under|except|unless|if|between|ranges?|wrong|incorrect)\b/i;

/** A token that is mathematical: it has a digit or a LaTeX command (`14`, `\frac{1}{2}`, `-3.5`, `2\sqrt{3}`). */
const MATHY = /[\d\\]/;

/**
 * Rule `phrase_value`: the one value a short phrase states (`Each person gets 14 slices` -> 14,
 * `\text{The total is } 36` -> 36). Null when the phrase qualifies its number (a range, a bound, a
 * negation, a hedge: `at least 5`, `3 or 4`), states several values, or is longer than 30 words. With the
 * problem, numbers the problem itself states with the same following word (`in 4 weeks`) are not
 * candidates, so `36 hours ... in 4 weeks` answers 36.
 */
export function phraseValue(raw: string, hints?: ProblemHints): AnswerNode | null {
  const text = raw.trim();
  if (QUALIFIERS.test(text)) return null;
  const tokens = text.split(/\s+/);
  if (tokens.length > 30) return null;
  // Runs of mathematical tokens (with operators between them) are one candidate each.
  const runs: { latex: string; next: string }[] = [];
  let cur: string[] = [];
  const flush = (next: string) => {
    if (cur.length) runs.push({ latex: cur.join(' '), next });
    cur = [];
  };
  for (const tok of tokens) {
    const t = tok.replace(/^[("']+|[)"',.;:!?]+$/g, '');
    if (MATHY.test(t) || (cur.length > 0 && /^[-+*/=^]$/.test(t))) cur.push(t);
    else flush(t.toLowerCase());
  }
  flush('');
  let candidates = runs;
  if (hints && runs.length > 1) {
    const restated = (r: { latex: string; next: string }) => r.next !== '' && hints.text.includes(`${r.latex.toLowerCase()} ${r.next}`);
    candidates = runs.filter((r) => !restated(r));
  }
  if (candidates.length !== 1) return null;
  try {
    const node = parseAnswer(candidates[0].latex);
    return node.kind === 'expr' || node.kind === 'relation' ? node : null;
  } catch {
    return null;
  }
}
