import { gradeAsync, type GradeAsyncOptions, type Verdict } from './grade';

/** One output line of `rstar grade`. `error` names the offending field when the input line was malformed. */
export interface GradeLineResult {
  id: string | number | null;
  correct: boolean;
  extracted: string | null;
  rule: string;
  ms: number;
  error?: string;
  /** Set when the gold did not parse (rule `gold_unparsed`): what to fix. */
  warning?: string;
  /** With `explain`: the normal forms and what the deciding rule compared. */
  normalizedPrediction?: string | null;
  normalizedGold?: string | null;
  compared?: Verdict['compared'];
}

/** Options of {@link gradeJsonLine}. */
export interface GradeLineOptions extends GradeAsyncOptions {
  /** Add the normal forms and the compared forms to the result (`rstar grade --explain`). */
  explain?: boolean;
}

function fieldError(id: string | number | null, error: string): GradeLineResult {
  return { id, correct: false, extracted: null, rule: 'invalid_input', ms: 0, error };
}

/**
 * Grades one JSON line `{id, prediction, gold, problem?}` (prediction = the model's response; gold = the
 * reference answer, a string or a number; problem = the problem text, optional, for the problem-aware
 * rules). A malformed line yields a result with `rule: 'invalid_input'` and an `error` naming the field
 * and the fix; a gold that does not parse yields `rule: 'gold_unparsed'` and a `warning`. Never throws,
 * so a batch continues past bad lines.
 */
export async function gradeJsonLine(line: string, lineNo: number, opts: GradeLineOptions = {}): Promise<GradeLineResult> {
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch (e) {
    return fieldError(null, `line ${lineNo}: not valid JSON (${(e as Error).message}); expected {"id", "prediction", "gold"}`);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return fieldError(null, `line ${lineNo}: expected a JSON object {"id", "prediction", "gold"}`);
  const o = obj as Record<string, unknown>;
  const id = typeof o.id === 'string' || typeof o.id === 'number' ? o.id : null;
  if (id === null) return fieldError(null, `line ${lineNo}: field "id" must be a string or a number`);
  if (typeof o.prediction !== 'string') return fieldError(id, `line ${lineNo}: field "prediction" must be a string (the model's response)`);
  if (typeof o.gold !== 'string' && typeof o.gold !== 'number') return fieldError(id, `line ${lineNo}: field "gold" must be a string or a number (the reference answer)`);
  if (o.problem !== undefined && o.problem !== null && typeof o.problem !== 'string')
    return fieldError(id, `line ${lineNo}: field "problem" must be a string (the problem text) or be left out`);
  const { explain, ...gradeOpts } = opts;
  const v = await gradeAsync(o.prediction, String(o.gold), { ...gradeOpts, problem: typeof o.problem === 'string' ? o.problem : undefined });
  const out: GradeLineResult = { id, correct: v.correct, extracted: v.extracted, rule: v.rule, ms: Math.round(v.ms * 1000) / 1000 };
  if (v.rule === 'gold_unparsed')
    out.warning = `line ${lineNo}: the gold ${JSON.stringify(String(o.gold))} does not parse, so no answer can match it; fix the gold (LaTeX or plain text such as 1/sqrt(2))`;
  if (explain) {
    out.normalizedPrediction = v.normalizedPrediction;
    out.normalizedGold = v.normalizedGold;
    if (v.compared) out.compared = v.compared;
  }
  return out;
}
