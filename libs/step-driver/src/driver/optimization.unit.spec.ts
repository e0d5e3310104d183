import { afterEach, describe, expect, it } from 'vitest';
import { groupTimeoutBudgetS, parseRunConfig, makeEvent, streams, type RstarEvent, type RunConfig } from '@rstar/contracts';
import { InProcessBus } from '@rstar/messaging';
import { clippedLossStats, type TrainingBatch } from '@rstar/grpo';
import { ResamplingHandler } from '@rstar/groups';
import {
  OptimizationHandler, pickPrompts, resumePoint, stageOf, totalSteps, stepMetrics,
  type PolicyDelivery, type PromptSource, type Trainer, type WeightSync,
} from './index';

const config: RunConfig = parseRunConfig({
  seed: 5,
  stages: [
    { name: 's1', steps: 2, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 32, lr: 1e-3 },
    { name: 's2', steps: 1, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 64, lr: 1e-3 },
  ],
});
const prompts: PromptSource = { size: 6, get: (i) => ({ promptId: `p${i}`, problem: `${i}+${i}`, gold: String(2 * i) }) };

/** A trainer implementing the port with the reference loss math (no weights: logp_new = logp_old). */
class ReferenceTrainer implements Trainer {
  version = 0;
  batches: TrainingBatch[] = [];
  async trainStep(batch: TrainingBatch) {
    this.batches.push(batch);
    const s = clippedLossStats(batch.sequences.map((q) => ({ logpNew: q.oldLogprobs, logpOld: q.oldLogprobs, mask: q.lossMask, advantage: q.advantage })));
    this.version++;
    return { loss: s.loss, clipFraction: s.clipFraction, approxKl: s.approxKl, entropy: null, gradNorm: 0 };
  }
  async save(dir: string) {
    return { uri: `file://${dir}`, hash: this.batches.at(-1)!.hash };
  }
}

describe('step plan', () => {
  it('given two stages, then steps map to stages and the total is their sum', () => {
    expect(totalSteps(config)).toBe(3);
    expect(stageOf(config, 1).stage.name).toBe('s1');
    expect(stageOf(config, 2)).toMatchObject({ stageIndex: 1, stepInStage: 0 });
    expect(() => stageOf(config, 3)).toThrow(RangeError);
  });
  it('given the same seed and step, then the same prompts; excluded ones are never picked', () => {
    const a = pickPrompts({ runSeed: 1, step: 4, poolSize: 50, count: 8 });
    expect(pickPrompts({ runSeed: 1, step: 4, poolSize: 50, count: 8 })).toEqual(a);
    expect(new Set(a).size).toBe(8);
    const ex = new Set(a);
    expect(pickPrompts({ runSeed: 1, step: 4, poolSize: 50, count: 8, exclude: ex }).some((i) => ex.has(i))).toBe(false);
    expect(pickPrompts({ runSeed: 1, step: 4, poolSize: 3, count: 8 })).toHaveLength(3);
  });
});

describe('stepMetrics', () => {
  it('given one kept group and one all-equal group, then ratios are computed per definition', () => {
    const completed = (id: string, calls: number, errors: number, len: number) => ({
      rolloutId: id, groupId: 'g', step: 0, promptId: 'p', gold: '1', engineId: 'e', policyVersion: 0, promptTokenIds: [1],
      responseTokenIds: new Array(len).fill(2), logprobs: new Array(len).fill(0), lossMask: new Array(len).fill(1) as Array<0 | 1>,
      responseText: '', turns: 1, toolCalls: calls, toolErrors: errors, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer' as const,
    });
    const rollouts = new Map([
      ['a', completed('a', 2, 1, 10)], ['b', completed('b', 2, 0, 20)], ['c', completed('c', 4, 4, 30)], ['d', completed('d', 0, 0, 40)],
    ]);
    const base = { step: 0, promptId: 'p', mode: 'weighted' as const, seed: '', penalties: [], received: 2, expected: 2 };
    const m = stepMetrics({
      groups: [
        { ...base, groupId: 'g0', kept: ['a', 'c'], dropped: [], rewards: { a: 1, c: 0 }, groupDropped: null },
        { ...base, groupId: 'g1', kept: [], dropped: ['b', 'd'], rewards: { b: 1, d: 1 }, groupDropped: 'all_equal' },
      ],
      rollouts, train: null, timings: { rollouts: 5 }, policyVersion: 3,
    });
    expect(m.rewardMean).toBe(0.75);
    expect(m.droppedGroupShare).toBe(0.5);
    expect(m.toolErrorRatioPositive).toBe(1 / 4);
    expect(m.toolErrorRatioAll).toBe(5 / 8);
    expect(m.toolErrorRatioPositiveKept).toBe(1 / 2);
    expect(m.responseLengthMean).toBe(25);
    expect(m.clipFraction).toBeNull();
    expect(m.timeRolloutsMs).toBe(5);
  });
});

describe('OptimizationHandler on the in-process bus', () => {
  let bus: InProcessBus;
  afterEach(async () => bus?.close());

  /** Stand-in for policy-serving + reward-grading: answers each RolloutRequested deterministically. */
  async function fakeWorkers(b: InProcessBus, reward: (sampleIdx: number, promptIdx: number) => 0 | 1): Promise<void> {
    await b.subscribe({
      durable: 'workers', types: ['RolloutRequested'],
      handler: async (e) => {
        const d = e.data;
        const common = { runId: e.runId, streamId: streams.rollout(d.rolloutId), key: d.rolloutId, producer: 'test', causedBy: e };
        const r = reward(d.sampleIdx, d.promptIdx);
        await b.publish([
          makeEvent('RolloutCompleted', { ...common, data: {
            rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, promptId: d.promptId, gold: d.gold, engineId: 'e0', policyVersion: d.policyVersion,
            promptTokenIds: [1, 2], responseTokenIds: [3, 4, 5], logprobs: [-0.5, 0, -0.25], lossMask: [1, 0, 1], responseText: 'x',
            turns: 2, toolCalls: 1, toolErrors: d.sampleIdx % 2, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer',
          } }),
          makeEvent('RewardAssigned', { ...common, data: {
            rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, reward: r, correct: r === 1, extracted: null, gold: d.gold,
            normalizedPrediction: null, normalizedGold: null, rule: 'test', ms: 0,
          } }),
        ]);
      },
    });
  }
  async function record(b: InProcessBus): Promise<RstarEvent[]> {
    const log: RstarEvent[] = [];
    await b.subscribe({ durable: 'log', types: ['RunStarted', 'RunCompleted', 'StepStarted', 'StepOptimized', 'PolicyUpdated', 'StepCompleted', 'GroupResampled'], handler: async (e) => void log.push(e) });
    return log;
  }

  it('given workers and the resampler, then every step trains on G per group and the run completes', async () => {
    bus = new InProcessBus({ subjectPrefix: 'opt1' });
    const log = await record(bus);
    await fakeWorkers(bus, (s, p) => (p === 1 ? 1 : s % 2 === 0 ? 1 : 0)); // prompt 1: all correct -> dropped
    const resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();
    const trainer = new ReferenceTrainer();
    const updates: number[] = [];
    const engine: WeightSync = { engineId: 'e0', updateWeights: async (u) => void updates.push(u.version) };
    const h = new OptimizationHandler(bus, { config, runId: 'run-opt', prompts, trainer, engines: [engine], checkpointDir: '/tmp/ckpt' });
    const summary = await h.run();
    await h.stop();
    await resampler.stop();
    expect(summary.steps).toBe(3);
    expect(trainer.version).toBe(3);
    expect(updates).toEqual([1, 2, 3]);
    for (const b of trainer.batches) {
      expect(b.sequences).toHaveLength(2); // one group kept (G = 2), one dropped as all-correct
      expect(b.sequences[0].lossMask).toEqual([0, 0, 1, 0, 1]);
    }
    expect(summary.history[0].metrics.droppedGroupShare).toBe(0.5);
    expect(summary.history[0].metrics.rewardMean).toBe(0.75);
    await new Promise<void>((r) => { const t = setInterval(() => { if (log.some((e) => e.type === 'RunCompleted')) { clearInterval(t); r(); } }, 5); });
    const rp = resumePoint(log);
    expect(rp).toMatchObject({ started: true, finished: true, nextStep: 3 });
    expect(rp.policy?.version).toBe(3);
  });

  it('given a policy delivery, then PolicyUpdated (with its sync) precedes StepOptimized, which records the probe; the engines are re-probed before each step trains', async () => {
    bus = new InProcessBus({ subjectPrefix: 'opt-delivery' });
    const log = await record(bus);
    await fakeWorkers(bus, (s, p) => (p === 1 ? 1 : s % 2 === 0 ? 1 : 0));
    const resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();
    const trainer = new ReferenceTrainer();
    const calls: string[] = [];
    const probe = (version: number) => ({ engineId: 'e0', sync: 'distributed' as const, version, tokens: 3, maxAbsDiff: 0, meanAbsDiff: 0, worst: { position: 1, tokenId: 5, trainer: -1, engine: -1 }, tolerance: 1e-3, passed: true });
    const delivery: PolicyDelivery = {
      describe: async (u, step) => ({ kind: 'distributed', step, groupName: 'g', dtype: 'float32', buckets: [{ names: ['w'], dtypes: ['float32'], shapes: [[2]], bytes: 8 }] }),
      deliver: async (u) => {
        calls.push(`deliver ${u.version} after ${log.filter((e) => e.type === 'PolicyUpdated').length} updates`);
        return [probe(u.version)];
      },
      verify: async (v) => void calls.push(`verify ${v}`),
    };
    const h = new OptimizationHandler(bus, { config, runId: 'run-delivery', prompts, trainer, engines: [], delivery, checkpointDir: '/tmp/ckpt' });
    await h.run();
    await h.stop();
    await resampler.stop();
    expect(calls).toEqual(['verify 0', 'deliver 1 after 1 updates', 'verify 1', 'deliver 2 after 2 updates', 'verify 2', 'deliver 3 after 3 updates']);
    const optimized = log.filter((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized');
    expect(optimized.map((e) => e.data.weightProbe)).toEqual([[probe(1)], [probe(2)], [probe(3)]]);
    const types = log.filter((e) => e.type === 'StepOptimized' || e.type === 'PolicyUpdated').map((e) => e.type);
    expect(types).toEqual(['PolicyUpdated', 'StepOptimized', 'PolicyUpdated', 'StepOptimized', 'PolicyUpdated', 'StepOptimized']);
    expect(log.find((e): e is RstarEvent<'PolicyUpdated'> => e.type === 'PolicyUpdated')!.data.sync).toMatchObject({ kind: 'distributed', step: 0, groupName: 'g' });
    // Cut right after step 1's PolicyUpdated (its delivery never finished): resume from version 1, retrain step 1.
    const cut = log.slice(0, log.findIndex((e) => e.type === 'PolicyUpdated' && e.data.version === 2) + 1);
    const rp = resumePoint(cut);
    expect(rp.nextStep).toBe(1);
    expect(rp.optimizedNext).toBeNull();
    expect(rp.policy?.version).toBe(1);
  });

  it('given all-equal groups and maxExtraGroups, then extra groups from the next seeded prompts refill the step, bounded', async () => {
    bus = new InProcessBus({ subjectPrefix: 'opt4' });
    const requested: RstarEvent<'RolloutRequested'>[] = [];
    await bus.subscribe({ durable: 'req', types: ['RolloutRequested'], handler: async (e) => void requested.push(e as RstarEvent<'RolloutRequested'>) });
    // Prompts 0 and 2 of every step: all rewards equal (dropped); every other prompt index keeps its group.
    await fakeWorkers(bus, (s, p) => (p === 0 || p === 2 ? 1 : s % 2 === 0 ? 1 : 0));
    const resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();
    const refillConfig = parseRunConfig({ seed: 5, roc: { maxExtraGroups: 1 }, stages: [{ name: 's1', steps: 1, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 32, lr: 1e-3 }] });
    const trainer = new ReferenceTrainer();
    const h = new OptimizationHandler(bus, { config: refillConfig, runId: 'run-refill', prompts, trainer, engines: [], checkpointDir: '/tmp/c' });
    const summary = await h.run();
    await h.stop();
    await resampler.stop();
    // Prompt 0 dropped -> extra group 2 asked for; it drops too, but maxExtraGroups = 1 bounds the refill.
    const groups = [...new Set(requested.map((e) => e.data.groupId))];
    expect(groups).toEqual(['group:run-refill:0:0', 'group:run-refill:0:1', 'group:run-refill:0:2']);
    const seeded = pickPrompts({ runSeed: 5, step: 0, poolSize: prompts.size, count: 3 });
    expect(requested.filter((e) => e.data.promptIdx === 2).map((e) => e.data.promptId)).toEqual([`p${seeded[2]}`, `p${seeded[2]}`, `p${seeded[2]}`, `p${seeded[2]}`]);
    expect(summary.history[0].metrics).toMatchObject({ extraGroups: 1, extraGroupsCap: 1, keptGroups: 1, groups: 3 });
    expect(trainer.batches[0].sequences).toHaveLength(2);
  });

  it('given a crash after the refill, then the resumed step asks for the same extra groups under the same ids', async () => {
    const refillConfig = parseRunConfig({ seed: 5, roc: { maxExtraGroups: 2 }, stages: [{ name: 's1', steps: 1, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 32, lr: 1e-3 }] });
    const reward = (s: number, p: number): 0 | 1 => (p === 0 || p === 2 ? 1 : s % 2 === 0 ? 1 : 0);
    const runOnce = async (prefix: string, store?: RstarEvent[]) => {
      const b = new InProcessBus({ subjectPrefix: prefix });
      const all: RstarEvent[] = [];
      await b.subscribe({ durable: 'all', types: ['RunStarted', 'StepStarted', 'RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'GroupResampled', 'StepOptimized', 'PolicyUpdated', 'StepCompleted'], handler: async (e) => void all.push(e) });
      await fakeWorkers(b, reward);
      const resampler = new ResamplingHandler(b, { sweepMs: 60_000 });
      await resampler.start();
      const h = new OptimizationHandler(b, { config: refillConfig, runId: 'run-refill-resume', prompts, trainer: new ReferenceTrainer(), engines: [], checkpointDir: '/tmp/c', store: store && { readRun: async () => store } });
      await h.run();
      await h.stop();
      await resampler.stop();
      await b.close();
      return all;
    };
    const first = await runOnce('opt7');
    const requestedIds = (log: RstarEvent[]) => log.filter((e) => e.type === 'RolloutRequested').map((e) => e.id).sort();
    expect(new Set(first.filter((e) => e.type === 'RolloutRequested').map((e) => (e.data as { groupId: string }).groupId)).size).toBe(4);
    // The process died once the extra groups were decided, before training: only rollout and group events survive.
    const cut = first.filter((e) => !['StepOptimized', 'PolicyUpdated', 'StepCompleted'].includes(e.type));
    const resumed = await runOnce('opt8', cut);
    expect(requestedIds(resumed)).toEqual(requestedIds(first));
    const done = (log: RstarEvent[]) => log.find((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted')!.data.metrics;
    expect(done(resumed)).toMatchObject({ extraGroups: 2, keptGroups: done(first).keptGroups });
  });

  it('given maxExtraGroups 2 and one all-equal group, then one extra group fills the step to its kept count', async () => {
    bus = new InProcessBus({ subjectPrefix: 'opt5' });
    await fakeWorkers(bus, (s, p) => (p === 0 ? 0 : s % 2 === 0 ? 1 : 0));
    const resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();
    const refillConfig = parseRunConfig({ seed: 5, roc: { maxExtraGroups: 2 }, stages: [{ name: 's1', steps: 1, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 32, lr: 1e-3 }] });
    const trainer = new ReferenceTrainer();
    const h = new OptimizationHandler(bus, { config: refillConfig, runId: 'run-refill2', prompts, trainer, engines: [], checkpointDir: '/tmp/c' });
    const summary = await h.run();
    await h.stop();
    await resampler.stop();
    expect(summary.history[0].metrics).toMatchObject({ extraGroups: 1, extraGroupsCap: 2, keptGroups: 2, groups: 3 });
    expect(trainer.batches[0].sequences).toHaveLength(4); // two kept groups of G = 2
  });

  it('given no maxExtraGroups, then the step metrics carry no refill figures', async () => {
    bus = new InProcessBus({ subjectPrefix: 'opt6' });
    const budgets: number[] = [];
    await bus.subscribe({ durable: 'req', types: ['RolloutRequested'], handler: async (e) => void budgets.push((e as RstarEvent<'RolloutRequested'>).data.resample!.timeoutS) });
    await fakeWorkers(bus, (s, p) => (p === 0 ? 0 : s % 2 === 0 ? 1 : 0));
    const resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();
    const plain = parseRunConfig({ seed: 5, stages: [{ name: 's1', steps: 1, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 32, lr: 1e-3 }] });
    const h = new OptimizationHandler(bus, { config: plain, runId: 'run-plain', prompts, trainer: new ReferenceTrainer(), engines: [], checkpointDir: '/tmp/c' });
    const summary = await h.run();
    await h.stop();
    await resampler.stop();
    expect(summary.history[0].metrics.groups).toBe(2);
    expect(Object.keys(summary.history[0].metrics).filter((k) => /extra|keptGroups/.test(k))).toEqual([]);
    // No groupTimeoutS: each group's budget comes from its stage (32 tokens, 10 turns, 4 s tool calls).
    expect(new Set(budgets)).toEqual(new Set([groupTimeoutBudgetS(plain, plain.stages[0])]));
    expect(budgets[0]).toBe(Math.ceil(300 + 32 / 10 + 2 * 10 * 4));
  });

  it('given a log with step 0 completed and step 1 optimized, then a resumed driver runs step 1 without training it again', async () => {
    bus = new InProcessBus({ subjectPrefix: 'opt2' });
    const log = await record(bus);
    await fakeWorkers(bus, (s) => (s % 2 === 0 ? 1 : 0));
    const resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();
    const first = new ReferenceTrainer();
    const h1 = new OptimizationHandler(bus, { config, runId: 'run-resume', prompts, trainer: first, engines: [], checkpointDir: '/tmp/c' });
    await h1.run();
    await h1.stop();
    await new Promise<void>((r) => { const t = setInterval(() => { if (log.some((e) => e.type === 'RunCompleted')) { clearInterval(t); r(); } }, 5); });
    // Cut the log as if the process died after StepOptimized of step 1.
    const cut = log.filter((e) => !(e.type === 'RunCompleted') && !(e.type === 'StepCompleted' && e.data.step >= 1) && !('step' in e.data && (e.data as { step: number }).step === 2))
      .filter((e) => !(e.type === 'PolicyUpdated' && e.data.version >= 2));
    const rp = resumePoint(cut);
    expect(rp.nextStep).toBe(1);
    expect(rp.optimizedNext?.step).toBe(1);
    const restored = new ReferenceTrainer();
    restored.version = rp.optimizedNext!.newPolicyVersion; // the caller restores the trainer from that checkpoint
    const bus2 = new InProcessBus({ subjectPrefix: 'opt3' });
    await fakeWorkers(bus2, (s) => (s % 2 === 0 ? 1 : 0));
    const resampler2 = new ResamplingHandler(bus2, { sweepMs: 60_000 });
    await resampler2.start();
    const h2 = new OptimizationHandler(bus2, { config, runId: 'run-resume', prompts, trainer: restored, engines: [], checkpointDir: '/tmp/c', store: { readRun: async () => cut } });
    const s = await h2.run();
    await h2.stop();
    await resampler.stop();
    await resampler2.stop();
    await bus2.close();
    expect(s.history.map((x) => x.step)).toEqual([1, 2]);
    expect(restored.batches).toHaveLength(1); // only step 2 trained
    expect(restored.batches[0].hash).toBe(first.batches[2].hash); // same seeds, same batch
  });
});
