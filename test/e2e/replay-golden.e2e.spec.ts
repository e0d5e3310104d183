import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { RstarEvent } from '@rstar/contracts';
import { grade } from '@rstar/grader';
import {
  completedRollouts, createRegrader, formatVerifyReport, groupTable, indexRun, readHistory, rerunStep, rolloutTranscript,
  runSummary, stepResumeState, stepTable, verifyRun, type Difference,
} from '@rstar/replay';
import { SandboxPool } from '@rstar/sandbox';

/**
 * The golden history (temporal-style): a recorded run committed under
 * test/fixtures/golden-run/ is replayed with today's code; any change that alters a recorded decision
 * fails with the event and the field it changed.
 */
const FILE = join(__dirname, '../fixtures/golden-run/events.jsonl');
const RUN = 'golden-run-1';
const events: RstarEvent[] = readHistory(FILE);

const describeDiff = (d: Difference) => `${d.eventId} field "${d.field}": ${d.message}`;
const clone = (): RstarEvent[] => JSON.parse(JSON.stringify(events));

describe('golden run replay', () => {
  it('reproduces every recorded decision: rewards, RoC picks and penalties, batch hashes', async () => {
    const report = await verifyRun(events);
    const failures = report.differences.filter((d) => d.deterministic).map(describeDiff);
    expect(failures, `replay of ${FILE} diverged:\n${failures.join('\n')}`).toEqual([]);
    expect(report.checked).toMatchObject({ rewards: 24, groups: 6, batches: 2, rollouts: 24 });
    expect(report.ok).toBe(true);
  });

  it('a changed grader rule shows up as reward differences on exactly the affected rollouts', async () => {
    // The deliberate change: the `numeric` rule no longer accepts (e.g. 12.0 or \frac{24}{2} for 12).
    const strictGrader = createRegrader({
      grader: (p, g) => {
        const v = grade(p, g);
        return v.rule === 'numeric' ? { ...v, correct: false, rule: 'numeric_disabled' } : v;
      },
    });
    const affected = events
      .filter((e): e is RstarEvent<'RewardAssigned'> => e.type === 'RewardAssigned' && e.data.rule === 'numeric' && e.data.correct)
      .map((e) => e.data.rolloutId)
      .sort();
    expect(affected.length).toBeGreaterThan(0);
    const report = await verifyRun(events, { grade: strictGrader });
    const rewardDiffs = report.differences.filter((d) => d.kind === 'reward');
    expect(rewardDiffs.map((d) => d.rolloutId).sort()).toEqual(affected);
    for (const d of rewardDiffs) {
      expect(d).toMatchObject({ eventId: `RewardAssigned:${d.rolloutId}`, field: 'reward', cause: 'grader_changed', deterministic: true });
      expect(d.recorded).toMatchObject({ reward: 1, correct: true, rule: 'numeric' });
      expect(d.recomputed).toMatchObject({ reward: 0, correct: false, rule: 'numeric_disabled' });
      expect(d.message).toContain(d.rolloutId!);
    }
    expect(report.ok).toBe(false);
    expect(formatVerifyReport(report)).toContain(`FAILED: ${report.deterministicDifferences} deterministic differences`);
  });

  it('names the event and the field when a recorded RoC pick, penalty or batch hash no longer matches', async () => {
    const tampered = clone();
    const group = tampered.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.groupDropped === null)!;
    [group.data.kept[0], group.data.dropped[0]] = [group.data.dropped[0], group.data.kept[0]];
    group.data.penalties[1].pErr += 1e-12;
    const opt = tampered.find((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized')!;
    opt.data.advantageStd = opt.data.advantageStd * (1 + Number.EPSILON);
    const report = await verifyRun(tampered);
    const at = report.differences.map((d) => `${d.eventId}#${d.field}`);
    expect(at).toContain(`${group.id}#kept`);
    expect(at).toContain(`${group.id}#dropped`);
    expect(at).toContain(`${group.id}#penalties.1.pErr`);
    expect(at).toContain(`${opt.id}#advantageStd`);
    expect(report.ok).toBe(false);
  });

  it('re-trains each step from the checkpoint it started from and compares the checkpoint hash', async () => {
    const starts: Array<[number, number | null]> = [];
    const report = await verifyRun(events, {
      retrain: async ({ step, batch, startCheckpoint }) => {
        starts.push([step, startCheckpoint?.version ?? null]);
        return step === 0 ? { checkpointHash: '' } : { checkpointHash: `retrained-${batch.hash.slice(0, 8)}` };
      },
    });
    // Step 0 starts from the initial policy (no PolicyUpdated), step 1 from version 1.
    expect(starts).toEqual([[0, null], [1, 1]]);
    expect(report.checked.checkpoints).toBe(2);
    const diffs = report.differences.filter((d) => d.kind === 'checkpoint_hash');
    expect(diffs).toHaveLength(1);
    expect(diffs[0]).toMatchObject({ eventId: `StepOptimized:${RUN}:1`, field: 'checkpointHash', step: 1, cause: 'trainer_changed' });
  });

  it('replays a real standalone `rstar train` run (built-in policy, tiny config) with zero differences', async () => {
    const real = readHistory(join(__dirname, '../fixtures/golden-run/tiny-standalone.jsonl'));
    const report = await verifyRun(real);
    const failures = report.differences.filter((d) => d.deterministic).map(describeDiff);
    expect(failures, failures.join('\n')).toEqual([]);
    expect(report.checked.rewards).toBe(16);
    expect(report.checked.groups).toBe(4);
    expect(runSummary(indexRun(real))).toMatchObject({ status: 'completed', mode: 'standalone', stepsCompleted: 2, rollouts: 16 });
  });

  it('rebuilds summary, step table, group table and transcripts from the log', () => {
    const ix = indexRun(events);
    const summary = runSummary(ix);
    expect(summary).toMatchObject({ runId: RUN, status: 'completed', stepsCompleted: 2, rollouts: 24, rolloutsCompleted: 24, toolCalls: 24, policyVersion: 2 });
    const steps = stepTable(ix);
    expect(steps.map((s) => [s.step, s.status, s.rolloutsCompleted])).toEqual([[0, 'completed', 12], [1, 'completed', 12]]);
    const groups = groupTable(ix, { step: 1 });
    expect(groups).toHaveLength(3);
    for (const g of groups.filter((x) => !x.groupDropped)) {
      const kept = g.members.filter((m) => m.status === 'kept');
      expect(kept).toHaveLength(2);
      // G = 2 keeps one positive and one negative: their group-relative advantages cancel.
      expect(kept.reduce((a, m) => a + m.advantage!, 0)).toBeCloseTo(0, 12);
    }
    const withCall = [...ix.rollouts.values()].find((r) => r.calls.some((c) => c.completed?.status === 'runtime_error'))!;
    const t = rolloutTranscript(ix, withCall.rolloutId);
    const call = t.turns.flatMap((x) => x.toolCalls).find((c) => c.status === 'runtime_error')!;
    expect(call.code).toMatch(/^print\(\d+ \* \d+ \+ d\)$/);
    expect(call.stderr).toContain("NameError: name 'd' is not defined");
    expect(t.reward?.rule).toBeTruthy();
    expect(t.resample?.status).toMatch(/kept|dropped/);
  });

  it('gives resume the completed rollouts of a step and the requests still to run', () => {
    // A crash in the middle of step 1: the last 5 rollouts of the step never completed.
    const step1 = events.filter((e) => e.type === 'RolloutCompleted' && e.data.step === 1).map((e) => (e as RstarEvent<'RolloutCompleted'>).data.rolloutId);
    const lost = new Set(step1.slice(-5));
    const cut = events.filter((e) => !((e.type === 'RolloutCompleted' || e.type === 'RewardAssigned') && lost.has((e.data as { rolloutId: string }).rolloutId)));
    const done = completedRollouts(cut, 1);
    expect(done.map((r) => r.rolloutId)).toEqual(step1.slice(0, -5));
    expect(done.every((r) => r.reward !== null && r.completed.step === 1)).toBe(true);
    const state = stepResumeState(cut, 1);
    expect(state.pending.map((q) => q.rolloutId)).toEqual([...lost]);
  });

  it('re-runs a step under a new run id linked to the original, same inputs and seeds', () => {
    const plan = rerunStep(events, { step: 1, newRunId: 'rerun-1' });
    const [started, stepStarted, ...requests] = plan.events;
    expect(started.type).toBe('RunStarted');
    expect((started as RstarEvent<'RunStarted'>).data.rerunOf).toEqual({ runId: RUN, step: 1 });
    expect(stepStarted.type).toBe('StepStarted');
    const original = events.filter((e): e is RstarEvent<'RolloutRequested'> => e.type === 'RolloutRequested' && e.data.step === 1);
    expect(requests).toHaveLength(original.length);
    requests.forEach((e, i) => {
      const q = (e as RstarEvent<'RolloutRequested'>).data;
      expect(e.runId).toBe('rerun-1');
      expect(q.rolloutId).toBe(`rollout:rerun-1:1:${original[i].data.promptIdx}:${original[i].data.sampleIdx}`);
      expect({ ...q, rolloutId: '', groupId: '' }).toEqual({ ...original[i].data, rolloutId: '', groupId: '' });
    });
  });
});

describe('golden run replay with tool re-execution (real Python sandbox)', () => {
  let pool: SandboxPool;
  beforeAll(async () => {
    pool = new SandboxPool({ workers: 2 });
    await pool.start();
  });
  afterAll(async () => {
    await pool?.close();
  });

  it('re-executes every recorded tool call with the same outputs', async () => {
    const report = await verifyRun(events, {
      execute: async (c) => pool.execute({ code: c.code, input: c.input, timeoutMs: c.timeoutMs, memoryMb: c.memoryMb, session: c.session ?? undefined }),
      concurrency: 2,
    });
    expect(report.checked.toolCalls).toBe(24);
    const failures = report.differences.filter((d) => d.deterministic).map(describeDiff);
    expect(failures, failures.join('\n')).toEqual([]);
  });

  it('classifies a tool output that changed as a real change, naming the ToolCallCompleted and field', async () => {
    const tampered = clone();
    const done = tampered.find((e): e is RstarEvent<'ToolCallCompleted'> => e.type === 'ToolCallCompleted' && e.data.status === 'ok')!;
    done.data.stdout = `${Number(done.data.stdout) + 1}\n`;
    const report = await verifyRun(tampered, {
      execute: async (c) => pool.execute({ code: c.code, input: c.input, timeoutMs: c.timeoutMs, memoryMb: c.memoryMb }),
    });
    const tool = report.differences.filter((d) => d.kind === 'tool_output');
    expect(tool).toHaveLength(1);
    expect(tool[0]).toMatchObject({ eventId: done.id, field: 'stdout', cause: 'real_change', deterministic: true, callId: done.data.callId });
  });
});
