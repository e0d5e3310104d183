import { beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { generateSyntheticRun } from '@rstar/testing';
import { indexRun } from './run.index';
import { compareRerun, formatRerunComparison } from './rerun.comparison';
import { NotInRunError } from './errors';
import { createRegrader } from './reward.regrader';

const opts = { grade: createRegrader(), seed: 4, steps: 1, promptsPerStep: 3, samples: 4, keep: 2, responseChars: 0 };
let original: RstarEvent[];
let rerun: RstarEvent[];
beforeAll(async () => {
  original = await generateSyntheticRun({ runId: 'orig', ...opts });
  // The same rollouts under the rerun's ids (run id, rollout, group and call ids all name the run).
  rerun = JSON.parse(JSON.stringify(original).replace(/\borig\b/g, 'again'));
});
const clone = (): RstarEvent[] => JSON.parse(JSON.stringify(rerun));
const compare = (b: RstarEvent[]) => compareRerun(indexRun(original), indexRun(b), 0);
const withCalls = (ev: RstarEvent[]) => ev.find((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted' && e.data.toolCalls > 0)!;

describe('compareRerun: a rerun of a recorded step against the original, rollout by rollout', () => {
  it('given the same rollouts under new ids, when compared, then every rollout is reproduced exactly', () => {
    const c = compare(rerun);
    expect(c).toMatchObject({ originalRunId: 'orig', rerunRunId: 'again', step: 0, ok: true, deterministicDifferences: 0, reproduced: 12, timingDependent: 0 });
    expect(c.rollouts.every((r) => r.rewardSame && r.answerSame && r.responseSame && r.rerunRolloutId === r.originalRolloutId.replace('orig', 'again'))).toBe(true);
    expect(formatRerunComparison(c)).toContain('OK: 12/12 rollouts reproduced exactly');
  });

  it('given a different reward in the rerun, then it is a deterministic difference naming the prompt, sample and rollout', () => {
    const b = clone();
    const w = b.find((e): e is RstarEvent<'RewardAssigned'> => e.type === 'RewardAssigned')!;
    w.data.reward = w.data.reward === 1 ? 0 : 1;
    const c = compare(b);
    const row = c.rollouts.find((r) => r.rerunRolloutId === w.data.rolloutId)!;
    expect(row.differences).toEqual([`reward ${1 - w.data.reward} -> ${w.data.reward}`]);
    expect(c.ok).toBe(false);
    expect(formatRerunComparison(c)).toContain(`DIFF prompt ${row.promptIdx} sample ${row.sampleIdx} (${row.originalRolloutId}): reward`);
  });

  it('given a rollout whose reward differs and its group dropped in the rerun only, then the group line names that rollout', () => {
    const b = clone();
    const w = b.find((e): e is RstarEvent<'RewardAssigned'> => e.type === 'RewardAssigned')!;
    w.data.reward = w.data.reward === 1 ? 0 : 1;
    const g = b.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.groupId === w.data.groupId)!;
    const before = g.data.groupDropped;
    g.data.groupDropped = before ? null : 'all_equal';
    const c = compare(b);
    const row = c.rollouts.find((r) => r.rerunRolloutId === w.data.rolloutId)!;
    expect(c.groupDifferences).toEqual([
      `group ${row.promptIdx}: dropped ${before ?? 'no'} -> ${before ? 'no' : 'all_equal'}, following the differences of (${row.originalRolloutId})`,
    ]);
    expect(c.deterministicDifferences).toBe(2);
  });

  it('given a tool call that timed out in the rerun, then it and what followed in its rollout are timing-dependent, not failing', () => {
    const b = clone();
    const done = b.find((e): e is RstarEvent<'ToolCallCompleted'> => e.type === 'ToolCallCompleted')!;
    Object.assign(done.data, { status: 'timeout', stdout: '' });
    const rc = b.find((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted' && e.data.rolloutId === done.data.rolloutId)!;
    rc.data.responseText += ' changed';
    const c = compare(b);
    const row = c.rollouts.find((r) => r.rerunRolloutId === done.data.rolloutId)!;
    expect(row.differences).toEqual([]);
    expect(row.timingDependent.some((l) => l.includes('output differs (timing_dependent)'))).toBe(true);
    expect(row.timingDependent.some((l) => l.startsWith('response text differs (after timing-dependent tool call'))).toBe(true);
    expect(c).toMatchObject({ ok: true, timingDependent: 1, reproduced: 11 });
  });

  it('given equal tool outputs, a first divergence inside a tool response is timing-dependent; inside model tokens it is deterministic', () => {
    const atObservation = clone();
    const rc = withCalls(atObservation).data;
    const i = rc.lossMask.indexOf(0);
    rc.responseTokenIds[i] += 1;
    rc.responseText += ' (execution time differs)';
    const c1 = compare(atObservation);
    expect(c1.ok).toBe(true);
    expect(c1.rollouts.find((r) => r.rerunRolloutId === rc.rolloutId)!.timingDependent).toEqual([expect.stringContaining('execution-time line')]);

    const atModel = clone();
    const rm = withCalls(atModel).data;
    rm.responseTokenIds[rm.lossMask.indexOf(1)] += 1;
    rm.responseText += ' (the model sampled differently)';
    const c2 = compare(atModel);
    expect(c2.ok).toBe(false);
    expect(c2.rollouts.find((r) => r.rerunRolloutId === rm.rolloutId)!.differences).toEqual(['response text differs']);
  });

  it('given a rollout missing from the rerun or an unknown step, then it reports or throws with the step named', () => {
    const c = compare(rerun.filter((e) => (e.data as { rolloutId?: string }).rolloutId !== 'rollout:again:0:0:0'));
    expect(c.rollouts[0].differences).toEqual([expect.stringContaining('not re-run')]);
    expect(c.ok).toBe(false);
    expect(() => compareRerun(indexRun(original), indexRun(rerun), 5)).toThrow(NotInRunError);
  });
});
