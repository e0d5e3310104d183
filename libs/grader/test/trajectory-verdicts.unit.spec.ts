import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gradeTrajectoryAnswer, readHandVerdicts } from '../src';

/**
 * The regression corpus: real final answers from ../shared/trajectories (MINT, MathCoder, ToRA) on which
 * the grader and the source's recorded verdict disagreed (before or after the rules of GRADING-RULES.md),
 * each with a hand-checked verdict, who was right and why. Runs without the shared data.
 */
const ROWS = readHandVerdicts(resolve(__dirname, '../fixtures/trajectory-verdicts.jsonl'));
const isIntegerGold = (g: string) => /^\s*-?\d+(?:\.0+)?\s*$/.test(g);

describe('trajectory-verdicts.jsonl (hand-checked real answers)', () => {
  it('has a verdict, who was right and a reason on every row', () => {
    expect(ROWS.length).toBeGreaterThan(150);
    for (const r of ROWS) {
      expect(typeof r.expected, r.id).toBe('boolean');
      expect(['source', 'grader', 'neither', 'both'], r.id).toContain(r.right);
      expect(r.reason.length, r.id).toBeGreaterThan(10);
    }
  });

  it.each(ROWS.map((r) => [r.id, r] as const))('%s', (_id, r) => {
    const v = gradeTrajectoryAnswer(r);
    if (r.decidable === false) {
      // Past what a bounded grader can prove: it must say so (undecided), never claim a verdict.
      expect(v).toMatchObject({ correct: false, rule: 'undecided' });
      return;
    }
    expect(v.correct, `rule=${v.rule} extracted=${v.extracted} | ${r.reason}`).toBe(r.expected);
  });

  it('accepts no wrong answer to an integer gold and no hedge, and reports agreement per source', () => {
    const perSource = new Map<string, { rows: number; right: number; recorded: number; recordedRight: number }>();
    let integerFalsePositives = 0;
    let hedgeFalsePositives = 0;
    for (const r of ROWS) {
      const v = gradeTrajectoryAnswer(r);
      const s = perSource.get(r.source) ?? { rows: 0, right: 0, recorded: 0, recordedRight: 0 };
      s.rows++;
      if (v.correct === r.expected || r.decidable === false) s.right++;
      if (r.recorded !== null) {
        s.recorded++;
        if (r.recorded === r.expected) s.recordedRight++;
      }
      perSource.set(r.source, s);
      if (v.correct && !r.expected && isIntegerGold(r.gold)) integerFalsePositives++;
      if (v.correct && (v.rule === 'hedged' || /\\text\{\s*or\s*\}|\\\\/.test(v.extracted ?? '')) && !r.expected) hedgeFalsePositives++;
    }
    for (const [source, s] of perSource)
      console.log(`${source}: ${s.rows} hand-checked rows, grader right on ${s.right}; the source's recorded verdict right on ${s.recordedRight}/${s.recorded}`);
    expect(integerFalsePositives).toBe(0);
    expect(hedgeFalsePositives).toBe(0);
  });
});
