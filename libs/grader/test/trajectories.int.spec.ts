import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { compareWithRecordedVerdicts, DEFAULT_TRAJECTORIES_DIR, type FileAgreement } from '../src';

const present = existsSync(DEFAULT_TRAJECTORIES_DIR);
if (!present) console.warn(`skipping trajectories.int.spec: ${DEFAULT_TRAJECTORIES_DIR} is absent (shared data not mounted)`);

describe.skipIf(!present)('real input: final answers of ../shared/trajectories vs the verdicts their sources recorded', () => {
  let files: FileAgreement[];
  beforeAll(() => {
    files = compareWithRecordedVerdicts();
  });

  it('agrees with the recorded verdicts on >= 94% of rows, and every disagreement is listed', () => {
    const withVerdict = files.reduce((n, f) => n + f.withVerdict, 0);
    const agree = files.reduce((n, f) => n + f.agree, 0);
    for (const f of files) {
      console.log(`${f.file}: graded ${f.graded}, correct ${f.correct}, recorded ${f.withVerdict}, agree ${f.agree}`);
      for (const d of f.disagreements) console.log(`  ${d.id} recorded=${d.recorded} ours=${d.ours} (${d.rule}): ${d.finalAnswer.slice(0, 60)} | gold ${d.gold.slice(0, 60)}`);
    }
    expect(withVerdict).toBeGreaterThan(2000);
    expect(agree / withVerdict).toBeGreaterThanOrEqual(0.94);
    // Every row is graded: ToRA rows carry no verdict but still get one from us.
    expect(files.find((f) => f.file === 'tora_70b_gsm8k.jsonl')?.graded).toBe(1319);
  });

  it('where the source accepted a rounded decimal for an exact gold, we do not (GRADING rules 3 and 6)', () => {
    const mc = files.find((f) => f.file === 'mathcoder_l7b_math_correct.jsonl');
    const row = mc?.disagreements.find((d) => d.id === 'mathcoder_l7b_math_correct-17');
    expect(row).toMatchObject({ recorded: true, ours: false, finalAnswer: '0.9091', gold: '\\frac{10}{11}' });
  });
});
