import { beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { generateSyntheticRun } from '@rstar/testing';
import { indexRun } from './run.index';
import { compareRerun, formatRerunComparison } from './rerun.comparison';
import { NotInRunError } from './errors';
import { createRegrader } from './reward.regrader';
import { rerunPhases, rerunStep } from './step.rerun';

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
  it('given a rerun rollout sampled on another policy version than the original, then it is a deterministic difference naming both versions', () => {
    const b = clone();
    const rc = b.find((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted')!;
    const was = rc.data.policyVersion;
    rc.data.policyVersion = was + 1;
    const c = compare(b);
    const row = c.rollouts.find((r) => r.rerunRolloutId === rc.data.rolloutId)!;
    expect(row.differences).toEqual([`sampled on policy version ${was} in the original, ${was + 1} in the rerun`]);
    expect(c.ok).toBe(false);
  });
});

describe('rerunPhases: an async step re-run on the weights each rollout was sampled on', () => {
  it('given a step whose rollouts were sampled under two versions (an update reached the engines between them), then one phase per version, lowest first, under the rerun ids', () => {
    const a: RstarEvent[] = JSON.parse(JSON.stringify(original));
    const completed = a.filter((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted');
    const later = new Set(completed.slice(5).map((e) => e.data.rolloutId));
    for (const e of completed.slice(5)) e.data.policyVersion = 1;
    const ix = indexRun(a);
    const phases = rerunPhases(ix, 0);
    expect(phases.map((p) => [p.policyVersion, p.rolloutIds.length])).toEqual([[0, 5], [1, 7]]);
    expect(new Set(phases[1].rolloutIds)).toEqual(later);
    // The plan carries them under its own run's ids, and every requested rollout is in exactly one phase.
    const plan = rerunStep(ix, { step: 0, newRunId: 'again' });
    expect(plan.phases.map((p) => p.rolloutIds.map((id) => id.replace('again', 'orig')))).toEqual(phases.map((p) => p.rolloutIds));
    const requested = plan.events.flatMap((e) => (e.type === 'RolloutRequested' ? [e.data.rolloutId] : []));
    expect(plan.phases.flatMap((p) => p.rolloutIds).sort()).toEqual([...requested].sort());
    // A synchronous step: one phase holding every rollout.
    expect(rerunPhases(indexRun(original), 0).map((p) => p.rolloutIds.length)).toEqual([12]);
    expect(() => rerunPhases(ix, 3)).toThrow(NotInRunError);
  });
});
