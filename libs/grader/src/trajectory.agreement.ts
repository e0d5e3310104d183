import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { grade, type Verdict } from './grade';
import { GraderError } from './errors';

/** Repository root (libs/grader/src -> ../../..). */
const REPO_ROOT = resolve(__dirname, '../../..');
/** The shared data folder: `RSTAR_SHARED_DIR`, else `../shared` next to the repository. */
export const SHARED_DIR = process.env.RSTAR_SHARED_DIR ? resolve(process.env.RSTAR_SHARED_DIR) : resolve(REPO_ROOT, '../shared');
/** Default location of the shared trajectories (see their README). */
export const DEFAULT_TRAJECTORIES_DIR = resolve(SHARED_DIR, 'trajectories');

/** One final answer of a real model with its gold and the verdict its source recorded. */
export interface TrajectoryAnswer {
  id: string;
  /** File stem (`mint_gpt-4-0613`). */
  source: string;
  problem: string;
  /** What is graded: the end of the model's last turn from 200 characters before its last box, or the source's extracted answer. */
  response: string;
  /** `response` is a model turn to extract the answer from (true), or the answer itself (MINT's `<solution>`). */
  extract: boolean;
  gold: string;
  /** `meta.correct` of the source, null where it recorded none (ToRA). */
  recorded: boolean | null;
}

/** A hand-checked verdict of the regression corpus (fixtures/trajectory-verdicts.jsonl). */
export interface HandVerdict extends TrajectoryAnswer {
  /** The verdict a person checked by hand: what the grader must answer. */
  expected: boolean;
  /** The grader's verdict before the rules of GRADING-RULES.md (same response, no problem). */
  before: boolean;
  /**
   * Who was right: `source` (its recorded verdict is the hand-checked one, the grader before was wrong),
   * `grader` (the grader before was right, the source wrong or silent), `neither`, or `both` (a row kept
   * as a real example of a kind, hedges mostly, on which both were right).
   */
  right: 'source' | 'grader' | 'neither' | 'both';
  /** Why, in a few words. */
  reason: string;
  /** False when no bounded grader can decide it (the proof takes longer than the time limit): it must end `undecided`. */
  decidable?: boolean;
}

/**
 * The gold answer as a grader string: lists (MINT/TheoremQA arrays) become `3, 5`; numbers and booleans
 * their text. With `listStrings` a string written as a Python list (`"[3, 5]"`, the DeepMind
 * *mathematics* file) is read as a list too; elsewhere `"[0,25]"` is an interval and stays as written.
 */
export function goldToString(gold: unknown, opts: { listStrings?: boolean } = {}): string {
  if (Array.isArray(gold)) return gold.map((g) => goldToString(g)).join(', ');
  if (typeof gold === 'boolean') return gold ? '\\text{True}' : '\\text{False}';
  if (typeof gold === 'number') return String(gold);
  const s = String(gold).trim();
  if (opts.listStrings && /^\[.*\]$/.test(s)) {
    try {
      const parsed: unknown = JSON.parse(s);
      if (Array.isArray(parsed)) return goldToString(parsed);
    } catch {
      // Not JSON: keep the text.
    }
  }
  return s;
}

interface Row {
  id: string;
  source: string;
  problem: string;
  gold_answer: unknown;
  final_answer: unknown;
  turns?: { role: string; text: string }[];
  meta?: { correct?: unknown; dataset?: unknown };
}

/** What the grader is given for a row (see {@link TrajectoryAnswer.response}). */
export function responseOf(row: Pick<Row, 'turns' | 'final_answer'>): { response: string; extract: boolean } | null {
  const assistant = (row.turns ?? []).filter((t) => t.role === 'assistant');
  const last = assistant[assistant.length - 1]?.text ?? '';
  const box = last.lastIndexOf('\\boxed');
  if (box >= 0) return { response: last.slice(Math.max(0, box - 200)), extract: true };
  if (row.final_answer === null || row.final_answer === undefined) return null;
  // No box: MINT's `<solution>` content is the answer itself; other sources' text goes through extraction.
  const fa = String(row.final_answer);
  return assistant.some((t) => t.text.includes('<solution>')) ? { response: fa, extract: false } : { response: fa, extract: true };
}

/**
 * Reads every row of the trajectory files in `dir` (*.jsonl, schema in its README) that has a gold and an
 * answer. Throws when `dir` does not exist.
 */
export function readTrajectoryAnswers(dir: string = DEFAULT_TRAJECTORIES_DIR): TrajectoryAnswer[] {
  if (!existsSync(dir)) throw new GraderError('invalid_input', `trajectories directory not found: ${dir} (set RSTAR_SHARED_DIR to the shared data folder)`);
  const out: TrajectoryAnswer[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort()) {
    for (const line of readFileSync(resolve(dir, file), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const row = JSON.parse(line) as Row;
      if (row.gold_answer === null || row.gold_answer === undefined) continue;
      const r = responseOf(row);
      if (!r) continue;
      const listStrings = /mathematics/i.test(String(row.meta?.dataset ?? ''));
      const recorded = typeof row.meta?.correct === 'boolean' ? row.meta.correct : null;
      out.push({ id: row.id, source: file.replace(/\.jsonl$/, ''), problem: row.problem, ...r, gold: goldToString(row.gold_answer, { listStrings }), recorded });
    }
  }
  return out;
}

/** Grades one corpus answer as reward-grading would, with its problem (problem-aware mode). */
export function gradeTrajectoryAnswer(a: Pick<TrajectoryAnswer, 'response' | 'extract' | 'gold' | 'problem'>): Verdict {
  return grade(a.response, a.gold, { extract: a.extract, problem: a.problem });
}

/** Agreement of the grader with one source. */
export interface SourceAgreement {
  source: string;
  graded: number;
  correct: number;
  /** Rows whose source recorded a verdict. */
  withVerdict: number;
  /** Of those, where the grader agrees with the recorded verdict. */
  agreeRecorded: number;
  /** Rows with a hand-checked or (unchallenged) recorded verdict, and where the grader agrees with it. */
  checked: number;
  agreeChecked: number;
  /** Rows where the grader differs from the recorded verdict and no hand-checked verdict covers the row. */
  unreviewed: { id: string; recorded: boolean; ours: boolean; rule: string; response: string; gold: string }[];
  /** Rows where the grader differs from the hand-checked verdict. */
  wrong: { id: string; expected: boolean; ours: boolean; rule: string; reason: string }[];
}

/**
 * Grades every answer and reports, per source, agreement with the recorded verdicts and with the
 * corrected ones (the hand-checked verdict where the corpus has one, else the recorded verdict).
 */
export function agreementBySource(answers: TrajectoryAnswer[], handChecked: ReadonlyMap<string, HandVerdict>): SourceAgreement[] {
  const bySource = new Map<string, SourceAgreement>();
  for (const a of answers) {
    let s = bySource.get(a.source);
    if (!s) {
      s = { source: a.source, graded: 0, correct: 0, withVerdict: 0, agreeRecorded: 0, checked: 0, agreeChecked: 0, unreviewed: [], wrong: [] };
      bySource.set(a.source, s);
    }
    const v = gradeTrajectoryAnswer(a);
    s.graded++;
    if (v.correct) s.correct++;
    if (a.recorded !== null) {
      s.withVerdict++;
      if (a.recorded === v.correct) s.agreeRecorded++;
    }
    const hand = handChecked.get(a.id);
    const expected = hand ? hand.expected : a.recorded;
    if (expected === null) continue;
    s.checked++;
    if (expected === v.correct) s.agreeChecked++;
    else if (hand) s.wrong.push({ id: a.id, expected, ours: v.correct, rule: v.rule, reason: hand.reason });
    else s.unreviewed.push({ id: a.id, recorded: a.recorded as boolean, ours: v.correct, rule: v.rule, response: a.response.slice(-120), gold: a.gold });
  }
  return [...bySource.values()].sort((x, y) => x.source.localeCompare(y.source));
}

/** Reads the hand-checked corpus (JSON lines of {@link HandVerdict}). */
export function readHandVerdicts(file: string): HandVerdict[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as HandVerdict);
}
