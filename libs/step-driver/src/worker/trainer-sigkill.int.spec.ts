import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, parseRunConfig, streams, type EventData, type RstarEvent } from '@rstar/contracts';
import { ResamplingHandler } from '@rstar/groups';
import { InProcessBus } from '@rstar/messaging';
import { freeLocalPort } from '@rstar/testing';
import { probeTokens, receiveDistributedWeights, SglangAdapter } from '@rstar/engines';
import { ensureTinyModel, startReferenceEngine, startTrainerWorker, TrainerWorkerClient, workersPythonForTests, type PythonProcess } from '@rstar/workers';
import { OptimizationHandler, type PromptSource } from '../driver';
import { HfPolicyDelivery } from '../hf/policy-delivery';
import { WorkerTrainer, workerCheckpoints, workerLoss, workerOptimizer } from './worker.trainer';

const python = workersPythonForTests();
const CACHE = resolve(__dirname, '../../../../.rstar/models');
/** workers/trainer's fault-injection hook: the step is applied in memory, nothing committed, until `release-<run>-<step>` exists. */
const HOLD_ENV = 'RSTAR_TRAINER_FAULT_HOLD_DIR';
const RUN = 'run-trainer-sigkill';
const STEPS = 5;
/** Killed while it trains this step: version 4 in memory, its last sharded checkpoint is version 2 (every 2). */
const KILLED_STEP = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const versionsIn = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((n) => /^v\d+$/.test(n)).map((n) => Number(n.slice(1))).sort((a, b) => a - b) : []);

/**
 * Issue 24's crash must-hold on real processes: the step driver of an hf run (OptimizationHandler,
 * WorkerTrainer, HfPolicyDelivery with `trainer.weightSync: distributed`) trains a 5-step run on the trainer
 * worker (a Python process, tiny model, sharded checkpoints every 2 steps, keepLast 2) and after every step
 * broadcasts the weights to a reference engine (policy-serving's half, `receiveDistributedWeights`, runs on
 * each PolicyUpdated) and probes it. The worker is SIGKILLed in the middle of step 3's train request (weights
 * updated in memory, nothing committed) and restarted on the same state directory and port; the driver's
 * long-poll keeps retrying, and the restarted worker (no weight-update group any more) is joined again with
 * the engine before version 4 is sent. The run completes with each step optimized once, the policy version
 * one higher per step, no step event published twice (the bus drops no duplicates here, so a re-publish would
 * show), every probe passing, and two model and two optimizer checkpoints left.
 */
describe.skipIf(!python)('trainer worker SIGKILLed mid-step under the step driver (sharded checkpoints, keepLast 2)', () => {
  let tmp: string;
  let model: string;
  let worker: PythonProcess | null = null;
  let engine: PythonProcess | null = null;
  const published: RstarEvent[] = [];
  let summary: Awaited<ReturnType<OptimizationHandler['run']>>;
  let killedAt: number | null = null;
  let stateDir: string;
  /** Receives of policy-serving's half that failed (a broadcast from a dead trainer would show here). */
  let receiveErrors: Error[] = [];

  beforeAll(async () => {
    model = await ensureTinyModel(CACHE);
    const vocab = (JSON.parse(readFileSync(join(model, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size;
    tmp = mkdtempSync(join(tmpdir(), 'rstar-trainer-sigkill-'));
    stateDir = join(tmp, 'state');
    const hold = join(tmp, 'hold');
    mkdirSync(hold);
    // Every step but the killed one goes through the hook at once (step 4 runs on the restarted worker, no hook).
    for (let s = 0; s < STEPS; s++) if (s !== KILLED_STEP) writeFileSync(join(hold, `release-${RUN}-${s}`), '');
    const port = await freeLocalPort();
    const start = (env?: Record<string, string>) => startTrainerWorker({ model, port, stateDir, checkpointRoot: join(tmp, 'ckpt'), threads: 1, ...(env ? { env } : {}) });
    [worker, engine] = await Promise.all([start({ [HOLD_ENV]: hold }), startReferenceEngine({ model, kvCapacityTokens: 2048, threads: 1, weightVersion: '0' })]);

    const config = parseRunConfig({
      name: 'trainer-sigkill', seed: 3,
      stages: [{ name: 'rl', steps: STEPS, promptsPerStep: 2, groupSize: 2, maxResponseTokens: 8, lr: 1e-3 }],
      policy: { kind: 'hf', path: model }, engines: [{ kind: 'sglang', url: engine.url }],
      trainer: { kind: 'worker', warmupSteps: 0, weightSync: 'distributed', weightSyncDtype: 'float32', weightSyncPort: await freeLocalPort() },
      checkpoints: { every: 2, keepLast: 2 },
    });
    // duplicateWindowMs 0: every publish reaches the subscribers, so an event sent twice is seen twice.
    const bus = new InProcessBus({ subjectPrefix: 'trainer-sigkill', duplicateWindowMs: 0 });
    await bus.subscribe({ durable: 'log', types: ['RunStarted', 'RunCompleted', 'RunFailed', 'StepStarted', 'StepOptimized', 'PolicyUpdated', 'StepCompleted'], handler: async (e) => void published.push(e) });
    // The rollout side: fixed token ids inside the vocabulary, rewards 1 and 0 in every group so each step trains.
    await bus.subscribe({
      durable: 'rollouts', types: ['RolloutRequested'],
      handler: async (e) => {
        if (e.type !== 'RolloutRequested') return;
        const d = e.data;
        const common = { runId: e.runId, streamId: streams.rollout(d.rolloutId), key: d.rolloutId, producer: 'test', causedBy: e };
        const r = d.sampleIdx % 2 === 0 ? 1 : 0;
        const response = [7, 11, 13, 17].map((t) => (t * (d.promptIdx + 2) + d.sampleIdx) % vocab);
        await bus.publish([
          makeEvent('RolloutCompleted', { ...common, data: {
            rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, promptId: d.promptId, gold: d.gold, engineId: 'e0', policyVersion: d.policyVersion,
            promptTokenIds: [3, 5, 9], responseTokenIds: response, logprobs: response.map(() => -Math.log(vocab)), lossMask: response.map(() => 1 as const), responseText: 'x',
            turns: 1, toolCalls: 0, toolErrors: 0, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer',
          } }),
          makeEvent('RewardAssigned', { ...common, data: {
            rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, reward: r, correct: r === 1, extracted: null, gold: d.gold,
            normalizedPrediction: null, normalizedGold: null, rule: 'test', ms: 0,
          } }),
        ]);
      },
    });
    // policy-serving's half of each distributed sync: the engine receives the buckets PolicyUpdated names
    // (not awaited in the handler: the trainer's broadcast starts only after the publish returns).
    const adapter = new SglangAdapter('sglang-0', engine.url);
    const receives: Promise<void>[] = [];
    receiveErrors = [];
    await bus.subscribe({
      durable: 'engines', types: ['PolicyUpdated'],
      handler: async (e) => {
        if (e.type === 'PolicyUpdated' && e.data.sync) receives.push(receiveDistributedWeights([adapter], e.data.sync, { version: e.data.version, checkpointHash: null }).catch((err: unknown) => void receiveErrors.push(err as Error)));
      },
    });
    const resampler = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await resampler.start();

    // The crash: as soon as the worker holds step 3 (updated, uncommitted), SIGKILL it and start it again.
    const crash = (async () => {
      const held = join(hold, `held-${RUN}-${KILLED_STEP}`);
      while (!existsSync(held)) {
        if (!worker!.running()) throw new Error(`trainer worker exited before step ${KILLED_STEP}:\n${worker!.output()}`);
        await sleep(50);
      }
      await worker!.kill();
      killedAt = KILLED_STEP;
      worker = await start();
    })();

    const prompts: PromptSource = { size: 16, get: (i) => ({ promptId: `p${i}`, problem: `${i}+${i}`, gold: String(2 * i) }) };
    const trainer = new WorkerTrainer({
      client: new TrainerWorkerClient(`http://127.0.0.1:${port}`, { retryBaseMs: 100, retryMaxMs: 1_000 }),
      workerRunId: RUN, batchDir: join(tmp, 'batches'), mode: 'grpo', initialVersion: 0, initFrom: model,
      loss: (s) => workerLoss(config, s), optimizer: (s) => workerOptimizer(config, s), checkpoints: (s) => workerCheckpoints(config, s),
      stepTimeoutMs: 300_000,
    });
    const delivery = new HfPolicyDelivery({ runId: RUN, config, trainerUrl: `http://127.0.0.1:${port}`, engines: [adapter], probeTokenIds: probeTokens(vocab), waitMs: 120_000, pollMs: 50 });
    await delivery.start();
    const h = new OptimizationHandler(bus, { config, runId: RUN, prompts, trainer, engines: [], delivery, checkpointDir: join(tmp, 'unused') });
    try {
      summary = await h.run();
      await crash;
      await Promise.all(receives);
    } finally {
      await h.stop();
      await resampler.stop();
    }
  }, 300_000);

  afterAll(async () => {
    await Promise.all([worker?.stop(), engine?.stop()]);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('the kill landed mid-step and the restarted worker trained that step once more, from version 3 to 4', async () => {
    expect(killedAt).toBe(KILLED_STEP);
    const res = await fetch(`${worker!.url}/v1/runs/${RUN}/steps/${KILLED_STEP}`);
    const body = (await res.json()) as { attempts: number; policyVersion: number; newPolicyVersion: number };
    expect([body.attempts, body.policyVersion, body.newPolicyVersion]).toEqual([2, KILLED_STEP, KILLED_STEP + 1]);
    for (let s = 0; s < STEPS; s++) {
      if (s === KILLED_STEP) continue;
      const o = (await (await fetch(`${worker!.url}/v1/runs/${RUN}/steps/${s}`)).json()) as { attempts: number };
      expect(o.attempts, `step ${s}`).toBe(1);
    }
    const run = (await (await fetch(`${worker!.url}/v1/runs/${RUN}`)).json()) as { policyVersion: number; versions: number[] };
    expect(run.policyVersion).toBe(STEPS);
    expect(run.versions).toEqual(Array.from({ length: STEPS + 1 }, (_, i) => i));
  });

  it('the run completes with every step optimized once, the version one higher per step, and no step event published twice', () => {
    expect(summary.steps).toBe(STEPS);
    expect(summary.policyVersion).toBe(STEPS);
    const data = <T extends RstarEvent['type']>(type: T) => published.filter((e) => e.type === type).map((e) => e.data as EventData<T>);
    expect(data('RunFailed')).toEqual([]);
    expect(receiveErrors.map((e) => e.message)).toEqual([]);
    expect(data('RunStarted')).toHaveLength(1);
    expect(data('RunCompleted')).toHaveLength(1);
    expect(data('StepStarted').map((d) => d.step)).toEqual([0, 1, 2, 3, 4]);
    expect(data('StepStarted').map((d) => d.policyVersion)).toEqual([0, 1, 2, 3, 4]);
    expect(data('StepOptimized').map((d) => [d.step, d.newPolicyVersion])).toEqual([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]);
    expect(data('PolicyUpdated').map((d) => [d.version, d.sync?.kind])).toEqual([1, 2, 3, 4, 5].map((v) => [v, 'distributed']));
    // The engine received every version over the group and scored the probe on it, after the restart too.
    for (const d of data('StepOptimized')) {
      expect(d.weightProbe, `step ${d.step}`).toHaveLength(1);
      expect(d.weightProbe![0]).toMatchObject({ engineId: 'sglang-0', sync: 'distributed', version: d.newPolicyVersion, passed: true });
      expect(d.weightProbe![0]!.maxAbsDiff).toBeLessThan(1e-4);
    }
    expect(data('StepCompleted').map((d) => d.step)).toEqual([0, 1, 2, 3, 4]);
    const ids = published.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Each update names the worker's checkpoint of its own version.
    const hashes = data('PolicyUpdated').map((d) => d.checkpointHash);
    expect(new Set(hashes).size).toBe(STEPS);
    for (const d of data('StepOptimized')) expect(d.checkpointHash).toBe(data('PolicyUpdated')[d.step]!.checkpointHash);
  });

  it('keepLast 2 leaves two sharded model and two optimizer checkpoints: versions 4 and 5 (the final one)', () => {
    const runDir = join(stateDir, 'runs', RUN);
    expect(versionsIn(join(runDir, 'model'))).toEqual([4, 5]);
    expect(versionsIn(join(runDir, 'optimizer'))).toEqual([4, 5]);
  });
});
