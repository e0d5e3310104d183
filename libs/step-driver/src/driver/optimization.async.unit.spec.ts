import { afterEach, describe, expect, it } from 'vitest';
import { parseRunConfig, makeEvent, streams, type RstarEvent, type RunConfig } from '@rstar/contracts';
import { InProcessBus } from '@rstar/messaging';
import type { TrainingBatch } from '@rstar/grpo';
import { ResamplingHandler } from '@rstar/groups';
import { OptimizationHandler, resumePoint, type PromptSource, type Trainer } from './index';

const configOf = (maxStaleness: number, steps = 4): RunConfig => parseRunConfig({
  seed: 9,
  stages: [{ name: 's1', steps, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 32, lr: 1e-3 }],
  async: { maxStaleness },
});
const prompts: PromptSource = { size: 8, get: (i) => ({ promptId: `p${i}`, problem: `${i}+${i}`, gold: String(2 * i) }) };

/** A trainer implementing the port (version + 1 per step); records each batch. */
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

/**
 * Stand-in for policy-serving + reward-grading: answers each RolloutRequested with a RolloutCompleted
 * sampled under `versionOf(request)` (a lagging engine reports an older one) and a reward by sample parity.
 */
async function workers(b: InProcessBus, versionOf: (d: RstarEvent<'RolloutRequested'>['data']) => number): Promise<void> {
  await b.subscribe({
    durable: 'workers', types: ['RolloutRequested'],
    handler: async (e) => {
      const d = e.data;
      const common = { runId: e.runId, streamId: streams.rollout(d.rolloutId), key: d.rolloutId, producer: 'test', causedBy: e };
      const r = d.sampleIdx % 2 === 0 ? 1 : 0;
      await b.publish([
        makeEvent('RolloutCompleted', { ...common, data: {
          rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, promptId: d.promptId, gold: d.gold, engineId: 'e0', policyVersion: versionOf(d),
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
}

async function record(b: InProcessBus): Promise<RstarEvent[]> {
  const log: RstarEvent[] = [];
  await b.subscribe({ durable: 'log', allSubjects: true, types: ['RunStarted', 'RunCompleted', 'StepStarted', 'RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'GroupResampled', 'RolloutDiscarded', 'StepOptimized', 'PolicyUpdated', 'StepCompleted'], handler: async (e) => void log.push(e) });
  return log;
}

const untilCompleted = (log: RstarEvent[]) => new Promise<void>((r) => { const t = setInterval(() => { if (log.some((e) => e.type === 'RunCompleted')) { clearInterval(t); r(); } }, 5); });

/** Staleness of every trained rollout over the log: trainer version at its step minus the version that sampled it. */
function trainedStaleness(log: RstarEvent[], batches: TrainingBatch[]): number[] {
  const version = new Map(log.filter((e) => e.type === 'RolloutCompleted').map((e) => [(e as RstarEvent<'RolloutCompleted'>).data.rolloutId, (e as RstarEvent<'RolloutCompleted'>).data.policyVersion]));
  const optimized = log.filter((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized').sort((a, b) => a.data.step - b.data.step);
  return optimized.flatMap((o, i) => batches[i].sequences.map((q) => o.data.newPolicyVersion - 1 - version.get(q.rolloutId)!));
}

describe('OptimizationHandler with bounded staleness (in-process bus)', () => {
  let bus: InProcessBus;
  let resampler: ResamplingHandler;
  afterEach(async () => {
    await resampler?.stop();
    await bus?.close();
  });

  async function runWith(eta: number, prefix: string, versionOf: (d: RstarEvent<'RolloutRequested'>['data']) => number = (d) => d.policyVersion) {
    bus = new InProcessBus({ subjectPrefix: prefix });
    const log = await record(bus);
    await workers(bus, versionOf);
    resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();
    const trainer = new CountingTrainer();
    const h = new OptimizationHandler(bus, { config: configOf(eta), runId: `run-${prefix}`, prompts, trainer, engines: [], checkpointDir: '/tmp/ckpt-async' });
    const summary = await h.run();
    await h.stop();
    await untilCompleted(log);
    return { log, trainer, summary };
  }

  for (const eta of [1, 2]) {
    it(`given η = ${eta}, then steps s+1..s+η are requested before step s trains and no rollout is trained more than η versions late`, async () => {
      const { log, trainer, summary } = await runWith(eta, `async${eta}`);
      expect(summary.steps).toBe(4);
      expect(trainer.version).toBe(4);
      const at = (type: string, step: number) => log.findIndex((e) => e.type === type && (e.data as { step: number }).step === step);
      for (let s = 0; s + eta < 4; s++) expect(at('StepStarted', s + eta)).toBeLessThan(at('StepOptimized', s));
      // The window never runs further ahead than η.
      for (let s = 0; s + eta + 1 < 4; s++) expect(at('StepStarted', s + eta + 1)).toBeGreaterThan(at('StepOptimized', s));
      const st = trainedStaleness(log, trainer.batches);
      expect(st.length).toBe(4 * 2 * 2);
      expect(Math.max(...st)).toBe(eta);
      expect(Math.min(...st)).toBe(0);
      expect(log.filter((e) => e.type === 'RolloutDiscarded')).toHaveLength(0);
      expect(summary.history.map((h) => h.metrics.stalenessMax)).toEqual([0, ...Array.from({ length: 3 }, (_, i) => Math.min(i + 1, eta))]);
      expect(summary.history.every((h) => h.metrics.staleRolloutsDiscarded === 0 && h.metrics.maxStaleness === eta)).toBe(true);
    });
  }

  it('given η = 1 and an engine that samples odd prompts two versions late, then those rollouts are discarded with RolloutDiscarded and counted', async () => {
    const { log, trainer, summary } = await runWith(1, 'asynclag', (d) => (d.promptIdx === 1 ? Math.max(0, d.policyVersion - 1) : d.policyVersion));
    const discarded = log.filter((e): e is RstarEvent<'RolloutDiscarded'> => e.type === 'RolloutDiscarded');
    expect(discarded.length).toBeGreaterThan(0);
    for (const d of discarded) {
      expect(d.data).toMatchObject({ reason: 'stale', maxStaleness: 1, staleness: 2 });
      expect(d.data.trainPolicyVersion - d.data.policyVersion).toBe(2);
      expect(d.id).toBe(`RolloutDiscarded:${d.data.rolloutId}`);
      expect(trainer.batches.some((b) => b.sequences.some((q) => q.rolloutId === d.data.rolloutId))).toBe(false);
    }
    expect(Math.max(...trainedStaleness(log, trainer.batches))).toBeLessThanOrEqual(1);
    const counted = summary.history.reduce((n, h) => n + (h.metrics.staleRolloutsDiscarded ?? 0), 0);
    expect(counted).toBe(discarded.length);
  });

  it('given η = 0, then StepCompleted carries no staleness metrics and each step is requested after the previous one completed', async () => {
    const { log, summary } = await runWith(0, 'async0');
    expect(Object.keys(summary.history[0].metrics)).not.toContain('stalenessMax');
    const at = (type: string, step: number) => log.findIndex((e) => e.type === type && (e.data as { step: number }).step === step);
    for (let s = 0; s + 1 < 4; s++) expect(at('StepStarted', s + 1)).toBeGreaterThan(at('StepCompleted', s));
  });

  it('given η = 1 and a log cut after step 1 was optimized, then the resumed driver restores the window from the log and re-issues identical requests', async () => {
    const first = await runWith(1, 'asyncres1');
    const log = first.log;
    // Cut as if the process died right after StepOptimized of step 1 (step 2's requests already on the log).
    const cutAt = log.findIndex((e) => e.type === 'StepOptimized' && e.data.step === 1);
    const cut = log.slice(0, cutAt + 1);
    const rp = resumePoint(cut);
    expect(rp.nextStep).toBe(1);
    expect([...rp.inFlight.keys()]).toEqual([1, 2]);
    await resampler.stop();
    await bus.close();
    bus = new InProcessBus({ subjectPrefix: 'asyncres2' });
    const log2 = await record(bus);
    await workers(bus, (d) => d.policyVersion);
    resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();
    const restored = new CountingTrainer();
    restored.version = rp.optimizedNext!.newPolicyVersion;
    const h = new OptimizationHandler(bus, { config: configOf(1), runId: 'run-asyncres1', prompts, trainer: restored, engines: [], checkpointDir: '/tmp/ckpt-async', store: { readRun: async () => cut } });
    const s = await h.run();
    await h.stop();
    expect(s.history.map((x) => x.step)).toEqual([1, 2, 3]);
    expect(restored.batches.map((b) => b.hash)).toEqual(first.trainer.batches.slice(2).map((b) => b.hash)); // step 1 not trained twice
    const same = (type: string) => (e: RstarEvent) => e.type === type;
    const requested = (l: RstarEvent[]) => new Map(l.filter(same('RolloutRequested')).map((e) => [e.id, JSON.stringify(e.data)]));
    const original = requested(log);
    for (const [id, data] of requested(log2)) expect(data, id).toBe(original.get(id));
    for (const e of log2.filter(same('StepStarted'))) expect(JSON.stringify(e.data)).toBe(JSON.stringify(log.find((x) => x.id === e.id)!.data));
  });
});
