import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';
import { ids, parseRunConfig, type RstarEvent } from '@rstar/contracts';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { JetStreamBus } from '@rstar/messaging';
import { createEngines, startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { formatVerifyReport, indexRun, verifyRun, type VerifyReport } from '@rstar/replay';
import { SandboxPool } from '@rstar/sandbox';
import { readRunEvents, RunStartConsumer } from '@rstar/step-driver';
import { rebuildStepBatch, evaluatePassAt1, pairedGain, poolToolExecutor, type PassAt1Report, submitRemoteRun, startRolloutServices, builtinRetrainer, heldOutEvalOptions, runPromptsThatFit } from '@rstar/training';
import { until } from '@rstar/testing';
import { trainedStaleness } from '../support/trained-staleness';

const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';


/** The run's bounded staleness η (async.maxStaleness): step s+1 is requested while step s trains. */
const ETA = 1;

/**
 * Distributed mode in one process: JetStream bus + Postgres archive, every service's handler on the bus
 * (the rollout path wired as `rstar train` wires it, the optimization service's RunStartConsumer), and
 * `rstar train --remote`'s submission (RunStarted). The run is the `tiny` preset's RL stages from the
 * cached SFT checkpoint, as in train-learning.e2e.spec.ts, with held-out pass@1 (256 prompts x 8 samples)
 * measured on the served engine before the submission and after the last policy update. The same
 * archived run is then replayed with `verifyRun` (tool calls re-executed, every step re-trained).
 * The run is asynchronous (`async.maxStaleness` η = 1, issue 26): step s+1's rollouts are generated while
 * step s trains, and no rollout may be trained more than one policy version after the version that
 * started it (checked over the log). Synchronous learning (η = 0) stays covered by train-learning.e2e.spec.ts.
 * With η = 1 (2026-12-02, 2 cores at load ~4, then ~11-25): 44.5% -> 52.7% (+8.2 ± 2.0), 44.3% -> 54.6%
 * (+10.3 ± 1.9; 676 of 716 trained rollouts one version late, none discarded); 308 s, then 1,249 s at the high load.
 *
 * Measured on 2 shared cores before the SFT traces were seeded (each machine its own checkpoint, 128 x 4
 * samples): seed 1 (the preset's), three runs: 43.9% -> 51.0%, 43.6% -> 51.4%, 43.8% -> 52.3%; seed 2:
 * 38.3% -> 46.3%; CI once +2.0. 4-5.5 min for the file then (replay verify ~65 s of it: ~2,500 tool calls
 * re-executed, 20 steps re-trained). Two runs of one seed differ a little because a tool response shows
 * the call's execution time, which the policy reads. The asserted margin (+3 points) is the one of
 * train-learning.e2e.spec.ts, whose comment has the measured spread across SFT and RL seeds.
 */
describe('rstar train --remote: the tiny preset with η = 1 learns over JetStream + Postgres and replays with no difference', () => {
  const tag = `train_dist_${process.pid}_${Date.now()}`;
  const runId = ids.newRun();
  let runtime: Runtime;
  let sandbox: SandboxPool;
  let engine: BuiltinEngine;
  let out: string;
  let events: RstarEvent[];
  let before: PassAt1Report;
  let after: PassAt1Report;
  let servedVersion = -1;
  const stops: Array<() => Promise<void>> = [];
  const lines: string[] = [];
  const log = (l: string) => process.stdout.write(`[train-distributed] ${l}\n`);

  beforeAll(async () => {
    const ckpt = await ensureSftCheckpoint();
    out = mkdtempSync(join(tmpdir(), 'rstar-train-dist-'));
    const preset = parseYaml(readFileSync(resolve(__dirname, '../../configs/tiny.yaml'), 'utf8'));
    const config = parseRunConfig({
      ...preset,
      name: 'tiny-distributed-e2e',
      // Another seed for the same check: RSTAR_E2E_SEED=2 npx vitest run test/e2e/train-distributed.e2e.spec.ts
      seed: process.env.RSTAR_E2E_SEED ? Number(process.env.RSTAR_E2E_SEED) : preset.seed,
      policy: { ...preset.policy, init: 'checkpoint', checkpoint: ckpt },
      data: { ...preset.data, heldOutSize: 256 },
      eval: { ...preset.eval, samples: 8 },
      async: { maxStaleness: ETA },
    });
    runtime = await connectRuntime({ natsUrl: NATS_URL, databaseUrl: PG_URL, schema: tag, stream: tag.toUpperCase(), subjectPrefix: tag, archive: true });
    const { bus, store } = runtime;
    sandbox = new SandboxPool({ workers: 2 });
    await sandbox.start();
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: ckpt, kvCapacityTokens: config.policy.model.context * 64 });
    const tokenizer = engine.model.tokenizer;
    const adapters = createEngines([`builtin=${engine.url}`]);
    const services = await startRolloutServices({ bus, store, runId, config, sandbox, engines: adapters, tokenizer });
    stops.unshift(() => services.stop());
    // The rollout path's durables are scoped to this run (startRolloutServices); the archiver's is the default.
    const pipeline = ['tool-execution', 'reward-grading', 'resampling', 'policy-serving-rollouts'].map((d) => `${d}-${runId}`).concat('archiver');
    const consumer = new RunStartConsumer(bus, store, { engines: adapters, checkpointRoot: out, durable: `optimization-runs-${tag}`, pipeline });
    await consumer.start();
    stops.unshift(() => consumer.stop());

    const { heldOut } = runPromptsThatFit(config);
    const tools = poolToolExecutor(sandbox, config.tool.outputChars);
    before = await evaluatePassAt1(adapters[0], tokenizer, tools, heldOut, heldOutEvalOptions(config));
    log(`pass@1 before RL: ${(before.passAt1 * 100).toFixed(1)}%`);
    await submitRemoteRun(config, { bus, runId, consumers: [`optimization-runs-${tag}`, ...pipeline], onLine: (l) => { lines.push(l); log(l); } });
    await runtime.flush();
    events = await readRunEvents(store, runId);
    const last = events.filter((e): e is RstarEvent<'PolicyUpdated'> => e.type === 'PolicyUpdated').reduce((v, e) => Math.max(v, e.data.version), 0);
    await until(() => services.serving.policyVersion >= last, `policy-serving to load policy version ${last}`, { timeoutMs: 120_000 });
    servedVersion = services.serving.policyVersion;
    after = await evaluatePassAt1(adapters[0], tokenizer, tools, heldOut, heldOutEvalOptions(config));
    log(`pass@1 after RL: ${(after.passAt1 * 100).toFixed(1)}%`);
  }, SFT_CHECKPOINT_TIMEOUT_MS + 900_000);

  afterAll(async () => {
    for (const stop of stops) await stop().catch(() => undefined);
    await engine?.close();
    await sandbox?.close();
    if (runtime) {
      await (runtime.bus as JetStreamBus).jsm.streams.delete(tag.toUpperCase()).catch(() => undefined);
      await runtime.close();
    }
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE; DROP SCHEMA IF EXISTS "${tag}_read" CASCADE`);
    await c.end();
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('runs every step through the services, reports each step to the submitter, and archives rebuildable batches', () => {
    const steps = 20;
    const count = (type: string, step: number) => events.filter((e) => e.type === type && (e.data as { step?: number }).step === step).length;
    expect(lines.filter((l) => l.startsWith('step ')).length).toBe(steps);
    expect(events.filter((e) => e.type === 'RunStarted').length).toBe(1);
    expect(events.filter((e) => e.type === 'RunCompleted').length).toBe(1);
    for (let step = 0; step < steps; step++) {
      // 16 prompts x 2G = 8 samples per step: every rollout requested, completed and rewarded once; every group
      // resampled. Asynchrony changes none of these counts: a stale rollout is still completed, rewarded and
      // resampled, and only left out of the batch (RolloutDiscarded, checked below).
      for (const type of ['RolloutRequested', 'RolloutCompleted', 'RewardAssigned']) expect(count(type, step), `${type} of step ${step}`).toBe(16 * 8);
      expect(count('GroupResampled', step)).toBe(16);
      expect(count('StepStarted', step)).toBe(1);
      expect(count('StepCompleted', step)).toBe(1);
    }
    const optimized = events.filter((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized');
    expect(optimized.length).toBeGreaterThan(0);
    // The batch rebuilt from the log (kept rollouts less the discarded) is the one optimization trained.
    for (const o of optimized) expect(rebuildStepBatch(events, o.data.step).hash).toBe(o.data.batchHash);
    // The engine serves the last update's weights.
    expect(servedVersion).toBe(optimized.at(-1)!.data.newPolicyVersion);
    expect(engine.model.hash).toBe(optimized.at(-1)!.data.checkpointHash);
  });

  it('overlaps rollouts with training and trains no rollout more than η = 1 policy version after the version that started it', () => {
    const started = new Map(events.filter((e): e is RstarEvent<'StepStarted'> => e.type === 'StepStarted').map((e) => [e.data.step, e.data.policyVersion]));
    // Step 1 was requested while step 0 trained, under the starting version.
    expect(started.get(1)).toBe(0);
    const { trained, entered } = trainedStaleness(events);
    const discarded = events.filter((e): e is RstarEvent<'RolloutDiscarded'> => e.type === 'RolloutDiscarded');
    const late = trained.filter((t) => !(t.staleness <= ETA)).map((t) => `${t.rolloutId} (step ${t.step}): started at version ${t.startedAt}, trained at ${t.trainedAt}`);
    log(`staleness over the log: ${trained.length} rollouts trained, ${trained.filter((t) => t.staleness === 1).length} of them 1 version late, ${discarded.length} discarded as stale`);
    expect(trained.length).toBeGreaterThan(0);
    expect(late, 'rollouts trained more than η versions late').toEqual([]);
    expect([...entered.entries()].filter(([, n]) => n !== 1), 'rollouts that entered more than one batch').toEqual([]);
    // Overlap happened: some trained rollouts were sampled under the version before the trainer's.
    expect(trained.some((t) => t.staleness === 1)).toBe(true);
    for (const d of discarded) expect(d.data.staleness, `RolloutDiscarded ${d.data.rolloutId}`).toBeGreaterThan(ETA);
    for (const c of events.filter((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted')) expect(c.data.metrics.maxStaleness).toBe(ETA);
  });

  it('improves held-out pass@1 over the SFT checkpoint by at least 3 points', () => {
    expect(before.prompts * before.samples).toBe(2048);
    expect(after.prompts * after.samples).toBe(2048);
    const { gain, se } = pairedGain(before, after);
    const msg = `distributed tiny preset RL: held-out pass@1 ${(before.passAt1 * 100).toFixed(1)}% -> ${(after.passAt1 * 100).toFixed(1)}% (+${(gain * 100).toFixed(1)} ± ${(se * 100).toFixed(1)} points)`;
    log(msg);
    expect(gain, msg).toBeGreaterThanOrEqual(0.03);
  });

  it('replays from the Postgres archive with zero deterministic differences (rewards, RoC picks, batches, tool outputs, checkpoint hashes)', async () => {
    const ix = indexRun(events, runId);
    const pool = sandbox;
    const report: VerifyReport = await verifyRun(ix, {
      execute: async (c) => {
        const r = await pool.execute({ code: c.code, input: c.input, timeoutMs: c.timeoutMs, memoryMb: c.memoryMb, session: c.session ?? undefined });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr, truncated: r.truncated };
      },
      retrain: builtinRetrainer(ix, join(out, runId)),
      concurrency: 4,
    });
    log(`verify: checked ${JSON.stringify(report.checked)}, skipped ${JSON.stringify(report.skipped)}, timings ms ${JSON.stringify(report.timingsMs)}`);
    const failures = report.differences.filter((d) => d.deterministic).map((d) => d.message);
    expect(failures, formatVerifyReport(report)).toEqual([]);
    expect(report.ok).toBe(true);
    const steps = report.steps.length;
    expect(steps).toBe(20);
    expect(report.checked.batches).toBe(events.filter((e) => e.type === 'StepOptimized').length);
    expect(report.checked.checkpoints).toBe(report.checked.batches);
    expect(report.checked.groups).toBeGreaterThan(0);
    expect(report.checked.rewards).toBe(report.checked.rollouts);
    expect(report.checked.toolCalls).toBeGreaterThan(0);
  }, 600_000);
});
