import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grade, readTrajectoryAnswers, SHARED_DIR } from '../src';

/**
 * Real golds in every form the datasets carry them (integers, LaTeX, plain text, numbers and lists of
 * ../shared/datasets and ../shared/trajectories): each parses (never `gold_unparsed`) and equals itself.
 */
const DATASETS = resolve(SHARED_DIR, 'datasets');
const present = existsSync(DATASETS);
if (!present) console.warn(`skipping dataset-golds.int.spec: ${DATASETS} is absent (shared data not mounted; set RSTAR_SHARED_DIR)`);

describe.skipIf(!present)('every real gold parses', () => {
  it('the golds of ../shared/datasets', () => {
    const bad: string[] = [];
    let n = 0;
    for (const f of readdirSync(DATASETS).filter((x) => x.endsWith('.jsonl'))) {
      for (const line of readFileSync(resolve(DATASETS, f), 'utf8').split('\n')) {
        if (!line.trim()) continue;
        const row = JSON.parse(line) as { id: string; answer: string };
        n++;
        const probe = grade('\\boxed{0.123456789}', row.answer);
        const self = grade(`\\boxed{${row.answer}}`, row.answer);
        if (probe.rule === 'gold_unparsed' || probe.rule === 'fail_closed' || !self.correct) bad.push(`${f} ${row.id} ${JSON.stringify(row.answer)}: ${probe.rule} / ${self.rule}`);
      }
    }
    console.log(`${n} dataset golds, ${bad.length} that do not parse or do not equal themselves`);
    expect(n).toBeGreaterThan(7000);
    expect(bad).toEqual([]);
  });

  it('the golds of ../shared/trajectories (plain text, numbers, lists)', () => {
    const answers = readTrajectoryAnswers();
    const bad = answers.filter((a) => ['gold_unparsed', 'fail_closed'].includes(grade('\\boxed{0.123456789}', a.gold).rule)).map((a) => `${a.id} ${a.gold}`);
    expect(answers.length).toBeGreaterThan(3800);
    expect(bad).toEqual([]);
  });
});
