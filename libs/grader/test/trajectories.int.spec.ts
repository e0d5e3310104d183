import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  agreementBySource,
  DEFAULT_TRAJECTORIES_DIR,
  readHandVerdicts,
  readTrajectoryAnswers,
  type HandVerdict,
  type SourceAgreement,
  type TrajectoryAnswer,
} from '../src';

const present = existsSync(DEFAULT_TRAJECTORIES_DIR);
if (!present) console.warn(`skipping trajectories.int.spec: ${DEFAULT_TRAJECTORIES_DIR} is absent (shared data not mounted; set RSTAR_SHARED_DIR)`);

const HAND = readHandVerdicts(resolve(__dirname, '../fixtures/trajectory-verdicts.jsonl'));

describe.skipIf(!present)('real input: every final answer of ../shared/trajectories against the recorded and hand-checked verdicts', () => {
  let answers: TrajectoryAnswer[];
  let bySource: SourceAgreement[];
  beforeAll(() => {
    answers = readTrajectoryAnswers();
    bySource = agreementBySource(answers, new Map(HAND.map((h) => [h.id, h] as [string, HandVerdict])));
  });

  it('the committed corpus matches the shared data (same answers, golds and recorded verdicts)', () => {
    const byId = new Map(answers.map((a) => [a.id, a]));
    for (const h of HAND) {
      const a = byId.get(h.id);
      expect(a, h.id).toBeDefined();
      expect({ response: a!.response, gold: a!.gold, recorded: a!.recorded, extract: a!.extract, problem: a!.problem }, h.id).toEqual({
        response: h.response,
        gold: h.gold,
        recorded: h.recorded,
        extract: h.extract,
        problem: h.problem,
      });
    }
  });

  it('reports agreement per source; every disagreement with a recorded verdict is hand-checked, and the grader is right on all of them', () => {
    for (const s of bySource) {
      const pct = (a: number, b: number) => (b === 0 ? '-' : `${((100 * a) / b).toFixed(1)}%`);
      console.log(
        `${s.source}: graded ${s.graded}, correct ${s.correct}; agrees with the recorded verdict on ${s.agreeRecorded}/${s.withVerdict} (${pct(s.agreeRecorded, s.withVerdict)}), ` +
          `with the checked verdict (hand-checked where the corpus has one) on ${s.agreeChecked}/${s.checked} (${pct(s.agreeChecked, s.checked)})`,
      );
      for (const u of s.unreviewed) console.log(`  UNREVIEWED ${u.id} recorded=${u.recorded} ours=${u.ours} (${u.rule}): ${u.response} | gold ${u.gold}`);
      for (const w of s.wrong) console.log(`  WRONG ${w.id} expected=${w.expected} ours=${w.ours} (${w.rule}): ${w.reason}`);
    }
    const undecidable = new Set(HAND.filter((h) => h.decidable === false).map((h) => h.id));
    expect(bySource.flatMap((s) => s.unreviewed)).toEqual([]);
    expect(bySource.flatMap((s) => s.wrong).filter((w) => !undecidable.has(w.id))).toEqual([]);
    expect(answers.length).toBeGreaterThan(3800);
    // Every row is graded: ToRA rows carry no verdict but still get one.
    expect(bySource.find((s) => s.source === 'tora_70b_gsm8k')?.graded).toBe(1319);
  });
});
