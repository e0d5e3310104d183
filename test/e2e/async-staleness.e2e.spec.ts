import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'pg';
import { ids, type RstarEvent, type RunConfig } from '@rstar/contracts';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { IM_END, type GenerateRequest, type GenerateResult } from '@rstar/agent';
import type { EngineAdapter } from '@rstar/engines';
import type { TrainingBatch } from '@rstar/grpo';
import { Tokenizer } from '@rstar/policy';
import { verifyRun } from '@rstar/replay';
import { SandboxPool } from '@rstar/sandbox';
import { OptimizationHandler, readRunEvents, resumePoint, RunStoppedError, runEventSource, type Trainer } from '@rstar/step-driver';
import { startRolloutServices } from '@rstar/training';
import { until } from '@rstar/testing';
import { asyncTestConfig, asyncTestPrompts } from '../support/async-step-driver';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const STEPS = 4;
const PROMPTS = 2;
const SAMPLES = 4;
const tag = `asyncst${process.pid}${Date.now().toString(36)}`;
const tok = new Tokenizer();
const prompts = asyncTestPrompts;

/** An engine that answers each turn after `ms`: `\boxed{42}` for even samples, `\boxed{41}` for odd (every group has both rewards). */
class ScriptedEngine implements EngineAdapter {
  readonly id = 'scripted-0';
  readonly kind = 'scripted';
  constructor(private readonly ms: number) {}
  async serverInfo() { return { kvCapacityTokens: 1_000_000 }; }
  async generate(req: GenerateRequest): Promise<GenerateResult> {
    await new Promise((r) => setTimeout(r, this.ms));
    const parts = req.rid.split(':');
    const text = `six times seven</reason><answer>\\boxed{${Number(parts[parts.length - 2]) % 2 === 0 ? 42 : 41}}</answer>${IM_END}`;
    const tokenIds = tok.encode(text);
    return { tokenIds, logprobs: tokenIds.map(() => -0.1), text, finishReason: 'stop' };
  }
  async abort() {}
  async updateWeights() {}
  async flushCache() {}
  async health() { return true; }
}

/** A trainer implementing the port: version + 1 per step after `ms`; records the rollouts of each batch. */
class CountingTrainer implements Trainer {
  trained: string[][] = [];
  constructor(public version = 0, private readonly ms = 50) {}
  async trainStep(batch: TrainingBatch) {
    await new Promise((r) => setTimeout(r, this.ms));
    this.trained.push(batch.sequences.map((q) => q.rolloutId));
    this.version++;
    return { loss: 0, clipFraction: 0, approxKl: 0, entropy: null, gradNorm: 0 };
  }
  async save(dir: string) {
    return { uri: `${dir}/v${this.version}`, hash: `h${this.version}` };
  }
}

/** Staleness of every rollout that entered a batch, over the archived log (trainer version before the update minus the sampling version). */
function trainedStaleness(events: readonly RstarEvent[]): { staleness: number[]; entered: Map<string, number> } {
  const sampledBy = new Map(events.flatMap((e) => (e.type === 'RolloutCompleted' ? [[e.data.rolloutId, e.data.policyVersion] as const] : [])));
  const discarded = new Set(events.flatMap((e) => (e.type === 'RolloutDiscarded' ? [e.data.rolloutId] : [])));
  const trainAt = new Map(events.flatMap((e) => (e.type === 'StepOptimized' ? [[e.data.step, e.data.newPolicyVersion - 1] as const] : [])));
  const staleness: number[] = [];
  const entered = new Map<string, number>();
  for (const g of events.filter((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled')) {
    const v = trainAt.get(g.data.step);
    if (v === undefined) continue;
    for (const id of g.data.kept.filter((k) => !discarded.has(k))) {
      staleness.push(v - sampledBy.get(id)!);
      entered.set(id, (entered.get(id) ?? 0) + 1);
    }
  }
  return { staleness, entered };
}

// Bounded-staleness runs (async.maxStaleness η = 1 and 2) over JetStream and a Postgres archive, as
// train-distributed.e2e.spec.ts runs distributed mode in one process: the real step driver and every
// rollout-side handler (policy-serving with its engine pool and weight gate, tool execution, reward
// grading, the resampler) on a private stream, an engine that answers after a delay. Checked over the
// archived log: steps s+1..s+η requested before step s's update, no rollout trained more than η versions
// after the version that sampled it, `replay verify` clean; and a step driver stopped mid-window and
// replaced by a fresh one (the process that resumes from the archive) completes the run with every
// rollout trained at most once and none lost.
describe('async GRPO over JetStream + Postgres (in one process)', () => {
  let runtime: Runtime;
  let sandbox: SandboxPool;

  beforeAll(async () => {
    runtime = await connectRuntime({ natsUrl: NATS_URL, databaseUrl: PG_URL, schema: tag, stream: tag.toUpperCase(), subjectPrefix: tag, archive: true, name: tag });
    sandbox = new SandboxPool({ workers: 1 });
    await sandbox.start();
  }, 180_000);
  afterAll(async () => {
    await sandbox?.close();
    const js = runtime?.bus as unknown as { jsm?: { streams: { delete(s: string): Promise<unknown> } }; stream?: string };
    await runtime?.close();
    if (js?.jsm && js.stream) await js.jsm.streams.delete(js.stream).catch(() => undefined);
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`);
    await c.end();
  }, 60_000);

  const configOf = (eta: number): RunConfig => asyncTestConfig(eta, STEPS);

  async function archived(runId: string): Promise<RstarEvent[]> {
    await runtime.flush();
    return readRunEvents(runtime.store, runId);
  }

  function expectBounded(events: RstarEvent[], eta: number): void {
    const count = (t: string) => events.filter((e) => e.type === t).length;
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(count('RunCompleted')).toBe(1);
    expect(count('RunFailed')).toBe(0);
    expect(count('RolloutRequested')).toBe(STEPS * PROMPTS * SAMPLES);
    expect(count('RolloutCompleted')).toBe(STEPS * PROMPTS * SAMPLES);
    expect(count('StepOptimized')).toBe(STEPS);
    const started = new Map(events.flatMap((e) => (e.type === 'StepStarted' ? [[e.data.step, e.data.policyVersion] as const] : [])));
    for (let s = 1; s <= eta; s++) expect(started.get(s), `step ${s} requested before step 0's update`).toBe(0);
    const { staleness, entered } = trainedStaleness(events);
    expect(staleness.length).toBeGreaterThan(0);
    expect(Math.max(...staleness)).toBeLessThanOrEqual(eta);
    expect([...entered.values()].every((n) => n === 1)).toBe(true);
  }

  for (const eta of [1, 2]) {
    it(`η = ${eta}: the window overlaps steps, no rollout is trained more than ${eta} versions late, replay verify is clean`, async () => {
      const runId = ids.newRun();
      const config = configOf(eta);
      const services = await startRolloutServices({ bus: runtime.bus, store: runtime.store, runId, config, sandbox, engines: [new ScriptedEngine(20)], tokenizer: tok });
      try {
        const h = new OptimizationHandler(runtime.bus, { config, runId, prompts, trainer: new CountingTrainer(0, 200), engines: [], checkpointDir: `/tmp/${runId}`, store: runEventSource(runtime.store), mode: 'distributed' });
        await h.run();
        await h.stop();
      } finally {
        await services.stop();
      }
      const events = await archived(runId);
      expectBounded(events, eta);
      const report = await verifyRun(events);
      expect(report.differences.filter((d) => d.deterministic).map((d) => d.message)).toEqual([]);
      expect(report.staleness.map((s) => s.step)).toEqual([0, 1, 2, 3]);
      expect(Math.max(...report.staleness.flatMap((s) => s.entered.map((e) => e.staleness)))).toBeLessThanOrEqual(eta);
    }, 240_000);
  }

  it('η = 1: the step driver stopped mid-window and a fresh one resumed from the archive; the run completes, no rollout trained twice or lost, bound holds', async () => {
    const runId = ids.newRun();
    const config = configOf(1);
    const services = await startRolloutServices({ bus: runtime.bus, store: runtime.store, runId, config, sandbox, engines: [new ScriptedEngine(60)], tokenizer: tok });
    try {
      const first = new CountingTrainer(0, 300);
      const h1 = new OptimizationHandler(runtime.bus, { config, runId, prompts, trainer: first, engines: [], checkpointDir: `/tmp/${runId}`, store: runEventSource(runtime.store), mode: 'distributed' });
      const run1 = h1.run();
      run1.catch(() => undefined);
      await until(async () => ((await readRunEvents(runtime.store, runId, ['PolicyUpdated'])).length > 0 ? true : undefined), 'the first PolicyUpdated archived', { timeoutMs: 120_000, everyMs: 50 });
      await h1.stop();
      await expect(run1).rejects.toBeInstanceOf(RunStoppedError);
      const cut = await archived(runId);
      expect(cut.filter((e) => e.type === 'RunCompleted')).toHaveLength(0);
      const rp = resumePoint(cut);
      expect(rp.nextStep).toBeLessThan(STEPS);
      expect(rp.inFlight.size).toBeGreaterThanOrEqual(1);
      // The fresh process restores the trainer from the archive (the latest update, or the one of a step optimized before the stop).
      const second = new CountingTrainer(rp.optimizedNext?.newPolicyVersion ?? rp.policy?.version ?? 0, 300);
      const h2 = new OptimizationHandler(runtime.bus, { config, runId, prompts, trainer: second, engines: [], checkpointDir: `/tmp/${runId}`, store: runEventSource(runtime.store), mode: 'distributed' });
      await h2.run();
      await h2.stop();
      const trained = [...first.trained, ...second.trained].flat();
      expect(new Set(trained).size, 'no rollout trained twice').toBe(trained.length);
    } finally {
      await services.stop();
    }
    const events = await archived(runId);
    expectBounded(events, 1);
    const report = await verifyRun(events);
    expect(report.differences.filter((d) => d.deterministic).map((d) => d.message)).toEqual([]);
  }, 300_000);
  it('η = 1: the step driver process SIGKILLed mid-window and restarted; the run completes, no rollout trained twice or lost, bound holds', async () => {
    const runId = ids.newRun();
    const config = asyncTestConfig(1, STEPS);
    const dir = mkdtempSync(join(tmpdir(), 'rstar-async-kill-'));
    const trainedFile = join(dir, 'trained.jsonl');
    const services = await startRolloutServices({ bus: runtime.bus, store: runtime.store, runId, config, sandbox, engines: [new ScriptedEngine(60)], tokenizer: tok });
    const driver = () => spawn(process.execPath, ['--import', 'tsx', resolve(__dirname, '../support/async-step-driver.ts')], {
      cwd: resolve(__dirname, '../..'), stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, ASYNC_TAG: tag, ASYNC_RUN: runId, ASYNC_NATS: NATS_URL, ASYNC_PG: PG_URL, ASYNC_ETA: '1', ASYNC_STEPS: String(STEPS), ASYNC_TRAINED: trainedFile, RSTAR_LOG_LEVEL: 'warn' },
    });
    const exited = (c: ReturnType<typeof spawn>) => new Promise<number | string | null>((r) => c.on('exit', (code, sig) => r(code ?? sig)));
    try {
      const first = driver();
      const firstExit = exited(first);
      await until(async () => ((await readRunEvents(runtime.store, runId, ['PolicyUpdated'])).length > 0 ? true : undefined), 'the first PolicyUpdated archived', { timeoutMs: 150_000, everyMs: 50 });
      first.kill('SIGKILL');
      expect(await firstExit).toBe('SIGKILL');
      const cut = await archived(runId);
      expect(cut.filter((e) => e.type === 'RunCompleted')).toHaveLength(0);
      expect(resumePoint(cut).inFlight.size).toBeGreaterThanOrEqual(1);
      const second = driver();
      expect(await exited(second)).toBe(0);
      const trained = readFileSync(trainedFile, 'utf8').trim().split('\n').flatMap((l) => JSON.parse(l) as string[]);
      expect(new Set(trained).size, 'no rollout trained twice').toBe(trained.length);
    } finally {
      await services.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    const events = await archived(runId);
    expectBounded(events, 1);
    const report = await verifyRun(events);
    expect(report.differences.filter((d) => d.deterministic).map((d) => d.message)).toEqual([]);
  }, 300_000);
});
