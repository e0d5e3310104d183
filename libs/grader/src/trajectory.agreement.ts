import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { grade, type Verdict } from './grade';

/** Repository root (libs/grader/src -> ../../..). */
const REPO_ROOT = resolve(__dirname, '../../..');
/** Default location of the shared trajectories (see their README). */
export const DEFAULT_TRAJECTORIES_DIR = resolve(REPO_ROOT, '../shared/trajectories');

/** One row where our verdict differs from the verdict the source recorded. */
export interface Disagreement {
  id: string;
  recorded: boolean;
  ours: boolean;
  rule: string;
  finalAnswer: string;
  gold: string;
}

/** Per-file figures of {@link compareWithRecordedVerdicts}. */
export interface FileAgreement {
  file: string;
  /** Rows with both a final answer and a gold answer. */
  graded: number;
  /** Of those, graded correct by us. */
  correct: number;
  /** Rows whose source recorded a verdict (`meta.correct`). */
  withVerdict: number;
  agree: number;
  disagreements: Disagreement[];
}

/**
 * The gold answer as a grader string: the sources store lists (`[3, 5]`, MINT/TheoremQA arrays, the
 * MathCoder *mathematics* file's `"[113]"`), numbers and booleans; a list becomes `3, 5`.
 */
export function goldToString(gold: unknown): string {
  if (Array.isArray(gold)) return gold.map((g) => goldToString(g)).join(', ');
  if (typeof gold === 'boolean') return gold ? '\\text{True}' : '\\text{False}';
  if (typeof gold === 'number') return String(gold);
  const s = String(gold).trim();
  if (/^\[.*\]$/.test(s)) {
    try {
      const parsed: unknown = JSON.parse(s);
      if (Array.isArray(parsed)) return goldToString(parsed);
    } catch {
      // Not JSON: keep the text (it may be an interval).
    }
  }
  return s;
}

/** Grades a source's `final_answer`: a response with a box is extracted, a bare answer is taken as is. */
export function gradeFinalAnswer(finalAnswer: string, gold: unknown): Verdict {
  const g = goldToString(gold);
  return /\\(?:boxed|fbox)/.test(finalAnswer) ? grade(finalAnswer, g) : grade(finalAnswer, g, { extract: false });
}

/**
 * Grades every trajectory's final answer in `dir` (*.jsonl, schema in its README) against its gold and
 * compares with the verdict its source recorded. Throws when `dir` does not exist.
 */
export function compareWithRecordedVerdicts(dir: string = DEFAULT_TRAJECTORIES_DIR): FileAgreement[] {
  if (!existsSync(dir)) throw new Error(`trajectories directory not found: ${dir} (pass the path of shared/trajectories)`);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((file) => {
      const out: FileAgreement = { file, graded: 0, correct: 0, withVerdict: 0, agree: 0, disagreements: [] };
      for (const line of readFileSync(resolve(dir, file), 'utf8').split('\n')) {
        if (!line.trim()) continue;
        const row = JSON.parse(line) as { id: string; gold_answer: unknown; final_answer: unknown; meta?: { correct?: unknown } };
        if (row.gold_answer === null || row.final_answer === null || row.final_answer === undefined) continue;
        const finalAnswer = String(row.final_answer);
        const v = gradeFinalAnswer(finalAnswer, row.gold_answer);
        out.graded++;
        if (v.correct) out.correct++;
        const recorded = row.meta?.correct;
        if (typeof recorded !== 'boolean') continue;
        out.withVerdict++;
        if (recorded === v.correct) out.agree++;
        else out.disagreements.push({ id: row.id, recorded, ours: v.correct, rule: v.rule, finalAnswer, gold: goldToString(row.gold_answer) });
      }
      return out;
    });
}
