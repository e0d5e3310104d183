import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grade } from '../src';

interface GradingCase {
  id: string;
  kind: string;
  prediction: string;
  gold: string;
  expected: boolean;
  anchor_verdicts: Record<string, boolean | null>;
}

const CASES: GradingCase[] = readFileSync(resolve(__dirname, '../fixtures/grading-cases.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));

const isIntegerGold = (g: string) => /^\s*-?\d+\s*$/.test(g);

describe('grading-cases.jsonl (docs/design/grading.md rules 1-10)', () => {
  it.each(CASES.map((c) => [c.id, c.kind, c] as const))('%s (%s)', (_id, _kind, c) => {
    const v = grade(c.prediction, c.gold);
    expect(v.correct, `rule=${v.rule} extracted=${v.extracted} pred=${v.normalizedPrediction} gold=${v.normalizedGold}`).toBe(c.expected);
  });

  it('is >= 98% right overall, beats every anchor grader, and has no false positive on an integer gold', () => {
    const misses: string[] = [];
    let right = 0;
    let integerFalsePositives = 0;
    for (const c of CASES) {
      const v = grade(c.prediction, c.gold);
      if (v.correct === c.expected) right++;
      else misses.push(`${c.id} ${c.kind}: expected ${c.expected}, got ${v.correct} (${v.rule})`);
      if (v.correct && !c.expected && isIntegerGold(c.gold)) integerFalsePositives++;
    }
    const accuracy = right / CASES.length;
    const anchors = Object.fromEntries(
      Object.keys(CASES[0].anchor_verdicts).map((name) => [
        name,
        CASES.filter((c) => c.anchor_verdicts[name] === c.expected).length / CASES.length,
      ]),
    );
    console.log(`grader accuracy ${(accuracy * 100).toFixed(1)}% on ${CASES.length} cases; anchors`, anchors, 'misses', misses);
    expect(accuracy, `misses:\n${misses.join('\n')}`).toBeGreaterThanOrEqual(0.98);
    expect(integerFalsePositives).toBe(0);
    for (const [name, acc] of Object.entries(anchors)) expect(accuracy, `vs ${name}`).toBeGreaterThan(acc);
  });
});
