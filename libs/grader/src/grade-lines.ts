import { gradeAsync, type GradeAsyncOptions } from './grade';

/** One output line of `rstar grade`. `error` names the offending field when the input line was malformed. */
export interface GradeLineResult {
  id: string | number | null;
  correct: boolean;
  extracted: string | null;
  rule: string;
  ms: number;
  error?: string;
}

function fieldError(id: string | number | null, error: string): GradeLineResult {
  return { id, correct: false, extracted: null, rule: 'invalid_input', ms: 0, error };
}

/**
 * Grades one JSON line `{id, prediction, gold}` (prediction = the model's response; gold = the reference
 * answer, a string or a number). A malformed line yields a result with `rule: 'invalid_input'` and an
 * `error` naming the field and the fix; it never throws, so a batch continues past bad lines.
 */
export async function gradeJsonLine(line: string, lineNo: number, opts: GradeAsyncOptions = {}): Promise<GradeLineResult> {
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
  const v = await gradeAsync(o.prediction, String(o.gold), opts);
  return { id, correct: v.correct, extracted: v.extracted, rule: v.rule, ms: Math.round(v.ms * 1000) / 1000 };
}
