import { beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { generateSyntheticRun } from '@rstar/testing';
import { verifyRun } from './run.verifier';
import { indexRun } from './run.index';
import { parseJsonl, toJsonl } from './history.jsonl';
import { HistoryFileError, MixedRunsError, NotInRunError } from './errors';
import { createRegrader } from './reward.regrader';

let events: RstarEvent[];
beforeAll(async () => {
  events = await generateSyntheticRun({ grade: createRegrader(), runId: 'unit-run', seed: 3, steps: 1, promptsPerStep: 4, samples: 4, keep: 2, responseChars: 0 });
});
const clone = (): RstarEvent[] => JSON.parse(JSON.stringify(events));

describe('verifyRun edge cases', () => {
  it('a generated run verifies clean and is byte-stable (same options, same events)', async () => {
    expect((await verifyRun(events)).ok).toBe(true);
    const again = await generateSyntheticRun({ grade: createRegrader(), runId: 'unit-run', seed: 3, steps: 1, promptsPerStep: 4, samples: 4, keep: 2, responseChars: 0 });
    expect(toJsonl(again)).toBe(toJsonl(events));
  });

  it('a timed-out group is not re-decided (timing-dependent) and counts as skipped', async () => {
    const ev = clone();
    const g = ev.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled')!;
    g.data.groupDropped = 'timeout';
    g.data.kept = [];
    const r = await verifyRun(ev.filter((e) => e.type !== 'StepOptimized'));
    expect(r.skipped.groups).toBe(1);
    expect(r.differences.filter((d) => d.groupId === g.data.groupId && d.kind !== 'reward')).toEqual([]);
  });

  it('a resampled rollout without its RolloutCompleted is a missing_event difference naming the group', async () => {
    const g = events.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.kept.length > 0)!;
    const gone = g.data.kept[0];
    const r = await verifyRun(events.filter((e) => !(e.type === 'RolloutCompleted' && e.data.rolloutId === gone)));
    const missing = r.differences.filter((d) => d.kind === 'missing_event');
    expect(missing.map((d) => d.eventId)).toContain(g.id);
    expect(r.ok).toBe(false);
  });

  it('rejects an unknown step, mixed runs and a bad history line with typed errors', async () => {
    await expect(verifyRun(events, { step: 9 })).rejects.toBeInstanceOf(NotInRunError);
    const other = events.slice(0, 1).map((e) => ({ ...e, runId: 'other' }));
    expect(() => indexRun([...events, ...other])).toThrow(MixedRunsError);
    const lines = toJsonl(events.slice(0, 2)) + '{"id":"x","type":"Nope"}\n';
    expect(() => parseJsonl(lines, 'h.jsonl')).toThrow(HistoryFileError);
    expect(() => parseJsonl(lines, 'h.jsonl')).toThrow(/h\.jsonl:3/);
  });
  it('a truncated rollout is re-graded 0 under rule `truncated`; a history labelling it with the grader rule still verifies, a reward of 1 does not', async () => {
    expect(createRegrader()({ rolloutId: 'r', responseText: 'so \\boxed{4}', gold: '4', truncated: true })).toMatchObject({ reward: 0, correct: false, rule: 'truncated' });
    const run = await generateSyntheticRun({ grade: createRegrader(), runId: 'trunc-run', seed: 5, steps: 1, promptsPerStep: 8, samples: 8, keep: 4, responseChars: 0 });
    const truncated = run.filter((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted' && e.data.truncated).map((e) => e.data.rolloutId);
    expect(truncated.length).toBeGreaterThan(0);
    const reward = (ev: RstarEvent[]) => ev.find((e): e is RstarEvent<'RewardAssigned'> => e.type === 'RewardAssigned' && e.data.rolloutId === truncated[0])!;
    expect(reward(run).data.rule).toBe('truncated');
    const legacy = JSON.parse(JSON.stringify(run)) as RstarEvent[];
    reward(legacy).data.rule = 'no_answer';
    expect((await verifyRun(legacy)).ok).toBe(true);
    const wrong = JSON.parse(JSON.stringify(run)) as RstarEvent[];
    reward(wrong).data.reward = 1;
    const r = await verifyRun(wrong);
    expect(r.differences.filter((d) => d.kind === 'reward').map((d) => d.eventId)).toEqual([reward(run).id]);
  });
});
