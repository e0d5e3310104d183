import { describe, expect, it } from 'vitest';
import { makeEvent, parseRunConfig, streams, type RstarEvent } from '@rstar/contracts';
import { InProcessBus } from '@rstar/messaging';
import { ResamplingHandler } from '@rstar/groups';
import { formatRolloutVersions, formatVerifyReport, indexRun, rerunStep, stepRolloutVersions, verifyRun, type RegradeFn } from '@rstar/replay';
import { OptimizationHandler, type PromptSource, type Trainer } from '@rstar/step-driver';
import type { TrainingBatch } from '@rstar/grpo';

/**
 * `replay verify` on an async run (η = 1) recorded from the real step driver and resampler on the
 * in-process bus, with an engine stand-in that samples prompt 1 two versions late: which rollouts
 * entered which step, the staleness of each and the discards are re-derived, and a tampered discard
 * or a stale rollout trained without one is a deterministic difference.
 */
const prompts: PromptSource = { size: 8, get: (i) => ({ promptId: `p${i}`, problem: `${i}+${i}`, gold: String(2 * i) }) };
const reward = (sampleIdx: number) => (sampleIdx % 2 === 0 ? 1 : 0);

class CountingTrainer implements Trainer {
  version = 0;
  batches: TrainingBatch[] = [];
  async trainStep(batch: TrainingBatch) {
    this.batches.push(batch);
    this.version++;
    return { loss: 0, clipFraction: 0, approxKl: 0, entropy: null, gradNorm: 0 };
  }
  async save(dir: string) {
    return { uri: `file://${dir}`, hash: this.batches.at(-1)!.hash };
  }
}

async function recordAsyncRun(): Promise<RstarEvent[]> {
  const bus = new InProcessBus({ subjectPrefix: 'asyncreplay' });
  const log: RstarEvent[] = [];
  await bus.subscribe({ durable: 'log', allSubjects: true, types: ['RunStarted', 'RunCompleted', 'StepStarted', 'RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'GroupResampled', 'RolloutDiscarded', 'StepOptimized', 'PolicyUpdated', 'StepCompleted'], handler: async (e) => void log.push(e) });
  await bus.subscribe({
    durable: 'workers', types: ['RolloutRequested'],
    handler: async (e) => {
      const d = e.data;
      const common = { runId: e.runId, streamId: streams.rollout(d.rolloutId), key: d.rolloutId, producer: 'test', causedBy: e };
      const r = reward(d.sampleIdx);
      await bus.publish([
        makeEvent('RolloutCompleted', { ...common, data: {
          rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, promptId: d.promptId, gold: d.gold, engineId: 'e0',
          policyVersion: d.promptIdx === 1 ? Math.max(0, d.policyVersion - 1) : d.policyVersion,
          promptTokenIds: [1, 2], responseTokenIds: [3, 4, d.sampleIdx + 5], logprobs: [-0.5, 0, -0.25], lossMask: [1, 0, 1], responseText: 'x',
          turns: 1, toolCalls: 0, toolErrors: 0, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer',
        } }),
        makeEvent('RewardAssigned', { ...common, data: {
          rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, reward: r, correct: r === 1, extracted: null, gold: d.gold,
          normalizedPrediction: null, normalizedGold: null, rule: 'test', ms: 0,
        } }),
      ]);
    },
  });
  const resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
  await resampler.start();
  const config = parseRunConfig({ seed: 3, stages: [{ name: 's1', steps: 4, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 32, lr: 1e-3 }], async: { maxStaleness: 1 } });
  const h = new OptimizationHandler(bus, { config, runId: 'run-async-replay', prompts, trainer: new CountingTrainer(), engines: [], checkpointDir: '/tmp/ckpt-async-replay' });
  await h.run();
  await h.stop();
  await new Promise<void>((r) => { const t = setInterval(() => { if (log.some((e) => e.type === 'RunCompleted')) { clearInterval(t); r(); } }, 5); });
  await resampler.stop();
  await bus.close();
  return log;
}

// The stand-in's rewards (rule `test`) as the regrader's verdict: this file checks the async decisions, not grading.
const grade: RegradeFn = ({ rolloutId }) => {
  const r = reward(Number(rolloutId.split(':').at(-1)));
  return { reward: r, correct: r === 1, rule: 'test', extracted: null };
};

/** The run id inside `rollout:<runId>:<step>:<promptIdx>:<sampleIdx>`. */
const RUN_ID_OF = (rolloutId: string): string => rolloutId.split(':').slice(1, -3).join(':');

describe('replay verify of an async run (η = 1)', () => {
  it('re-derives the entered rollouts, their staleness and the discards with no difference; rerun re-issues an async step', async () => {
    const log = await recordAsyncRun();
    const discards = log.filter((e): e is RstarEvent<'RolloutDiscarded'> => e.type === 'RolloutDiscarded');
    expect(discards.length).toBeGreaterThan(0);
    const report = await verifyRun(log, { grade });
    expect(report.differences.filter((d) => d.deterministic).map((d) => d.message)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.checked.batches).toBe(4);
    expect(report.staleness.map((s) => s.step)).toEqual([0, 1, 2, 3]);
    expect(report.staleness.flatMap((s) => s.discarded.map((d) => d.rolloutId)).sort()).toEqual(discards.map((d) => d.data.rolloutId).sort());
    for (const s of report.staleness) for (const e of s.entered) expect(e.staleness).toBeLessThanOrEqual(1);
    expect(Math.max(...report.staleness.flatMap((s) => s.entered.map((e) => e.staleness)))).toBe(1);
    expect(formatVerifyReport(report)).toMatch(/step 2: \d+ rollouts entered at trainer version 2 \(staleness max 1, η 1\), \d+ discarded as stale/);

    // Step 2 was requested while step 1 trained: its rerun re-issues it at the version it was requested at.
    const plan = rerunStep(log, { step: 2, newRunId: 'rerun-async' });
    const started = plan.events.find((e) => e.type === 'StepStarted') as RstarEvent<'StepStarted'>;
    expect(started.data.policyVersion).toBe(log.find((e): e is RstarEvent<'StepStarted'> => e.type === 'StepStarted' && e.data.step === 2)!.data.policyVersion);
    expect(started.data.policyVersion).toBe(1);
    expect(plan.events.filter((e) => e.type === 'RolloutRequested')).toHaveLength(2 * 2 * 2);
    // Its phases: every rollout once, under the version that sampled it in the original, lowest first.
    const sampled = new Map(log.flatMap((e) => (e.type === 'RolloutCompleted' && e.data.step === 2 ? [[e.data.rolloutId.replace(RUN_ID_OF(e.data.rolloutId), 'rerun-async'), e.data.policyVersion] as const] : [])));
    expect(plan.phases.flatMap((p) => p.rolloutIds).sort()).toEqual([...sampled.keys()].sort());
    for (const p of plan.phases) for (const id of p.rolloutIds) expect(sampled.get(id), id).toBe(p.policyVersion);
    expect(plan.phases.map((p) => p.policyVersion)).toEqual([...new Set(sampled.values())].sort((a, b) => a - b));
  });

  it('a partial rollout sampled under two versions is listed by the rerun plan with its versions and why it is re-run under its starting version', async () => {
    const log = await recordAsyncRun();
    const completed = log.filter((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted' && e.data.step === 2);
    const [partial, whole] = completed;
    const v = partial.data.policyVersion;
    // The partial rollout's one turn: its first 2 tokens under v, the rest under v + 1 (protocol.md §8); the other's turn under its one version.
    const turn = (c: RstarEvent<'RolloutCompleted'>, extra: object) => makeEvent('TurnGenerated', {
      runId: c.runId, streamId: streams.rollout(c.data.rolloutId), key: `${c.data.rolloutId}:0`, producer: 'test',
      data: { rolloutId: c.data.rolloutId, turn: 0, tokenIds: c.data.responseTokenIds, logprobs: c.data.logprobs, text: 'x', finishReason: 'stop', engineId: 'e0', ...extra },
    });
    const events = [...log, turn(partial, { policyVersion: v, segments: [{ fromToken: 0, policyVersion: v }, { fromToken: 2, policyVersion: v + 1 }] }), turn(whole, { policyVersion: whole.data.policyVersion })];

    const versions = stepRolloutVersions(indexRun(events), 2);
    expect(versions.get(partial.data.rolloutId)).toMatchObject({ startedAt: v, versions: [v, v + 1], partial: true, trainedAt: 2, staleness: 2 - v });
    expect(versions.get(whole.data.rolloutId)).toMatchObject({ versions: [whole.data.policyVersion], partial: false });
    expect(formatRolloutVersions(versions.get(partial.data.rolloutId)!)).toBe(`v${v}→v${v + 1} · trained at v2 · staleness ${2 - v}`);

    const plan = rerunStep(events, { step: 2, newRunId: 'rerun-partial' });
    const rerunId = partial.data.rolloutId.replace(RUN_ID_OF(partial.data.rolloutId), 'rerun-partial');
    expect(plan.multiVersion).toHaveLength(1);
    expect(plan.multiVersion[0]).toMatchObject({ rolloutId: rerunId, originalRolloutId: partial.data.rolloutId, versions: [v, v + 1], rerunUnder: v });
    expect(plan.multiVersion[0].reason).toContain(`re-run under its starting version v${v}`);
    expect(plan.multiVersion[0].reason).toContain(`v${v + 1} in the original are not expected to match`);
    // It is still re-run, once, in its starting version's phase.
    expect(plan.phases.filter((p) => p.rolloutIds.includes(rerunId)).map((p) => p.policyVersion)).toEqual([v]);
    // Without the segments no rollout of the step is multi-version.
    expect(rerunStep(log, { step: 2, newRunId: 'rerun-partial' }).multiVersion).toEqual([]);
  });

  it('a dropped RolloutDiscarded (a stale rollout trained) and a forged one are deterministic staleness differences', async () => {
    const log = await recordAsyncRun();
    const gone = log.find((e) => e.type === 'RolloutDiscarded')!;
    const without = log.filter((e) => e.id !== gone.id);
    const r1 = await verifyRun(without, { grade });
    const st = r1.differences.filter((d) => d.kind === 'staleness');
    expect(st).toHaveLength(1);
    expect(st[0]).toMatchObject({ deterministic: true, rolloutId: (gone.data as { rolloutId: string }).rolloutId });
    expect(st[0].message).toContain('has no RolloutDiscarded');
    expect(r1.ok).toBe(false);

    const fresh = log.find((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted' && e.data.step === 0)!;
    const group = log.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.kept.includes(fresh.data.rolloutId));
    if (group) {
      const forged = makeEvent('RolloutDiscarded', { runId: fresh.runId, streamId: streams.rollout(fresh.data.rolloutId), key: fresh.data.rolloutId, producer: 'optimization', data: {
        rolloutId: fresh.data.rolloutId, groupId: fresh.data.groupId, step: 0, reason: 'stale', policyVersion: 0, trainPolicyVersion: 0, staleness: 0, maxStaleness: 1,
      } });
      const r2 = await verifyRun([...log, forged], { grade });
      expect(r2.differences.some((d) => d.kind === 'staleness' && d.rolloutId === fresh.data.rolloutId && d.message.includes('within η = 1'))).toBe(true);
      expect(r2.ok).toBe(false);
    }
  });
});
