import { ModelTokenizer, type RolloutSpec } from '@rstar/agent';
import { EnginePool, SglangAdapter, type SchedulingPolicy } from '@rstar/engines';
import { runRolloutBatch, type RolloutBatchDeps } from '@rstar/rollouts';
import type { SandboxPool } from '@rstar/sandbox';
import { submitInWaves } from '@rstar/testing';
import { ensureTinyModel, startReferenceEngine, type PythonProcess } from '@rstar/workers';
import { rngFromSeed, seedOf } from '@rstar/grpo';
import { resolve } from 'node:path';

/*
 * Part 1b of `pnpm bench scheduler`: the same rollouts on reference engines (workers/trainer), which
 * admit optimistically and retract + recompute requests past their KV capacity as SGLang does, so a
 * scheduler that overloads an engine pays for it. The rollouts arrive as an asynchronous run with η = 1
 * submits them (issue 26): one step's group per wave, the next step's wave sent when half of the current
 * one has finished and all of the one before it has (two steps in flight; `submitInWaves`), through one
 * pool that lives across the waves as policy-serving's does. The KV capacity is set below what two
 * overlapping waves need.
 */

/** Figures of one policy on the reference engines. */
export interface ReferenceResult {
  policy: SchedulingPolicy;
  makespanS: number;
  /** Retractions the engines counted during the run (their `sglang:num_retracted_requests_total`). */
  retractions: number;
  /** Times `kv-adaptive` lowered an engine's admission factor. */
  backoffs: number;
  /** Highest admission factor `kv-adaptive` reached on an engine (1 = plain reservation). */
  peakAdmitFactor: number;
  /** Rollouts that waited in the pool's queue. */
  waited: number;
  /** Most rollouts in flight at once (two waves overlap: up to 2 x perWave). */
  peakInFlight: number;
  /** Model tokens generated in the run (the same work under every policy; seeded sampling). */
  generatedTokens: number;
  turns: number;
  /** Tokens the engines prefilled (prompts plus the recompute of retracted requests), from their counters. */
  prefillTokens: number;
  /** Tokens of KV the engines threw away on retraction (to be recomputed). */
  retractedTokens: number;
  /**
   * Model forward passes (decode steps + prefill batches) of the busiest engine: the makespan in engine
   * work, which the load of a shared machine does not change (a step of the tiny model costs about the
   * same at batch 1 and 32 on a CPU, so fewer, fuller steps are the whole gain of batching).
   */
  forwardPassesMax: number;
  /** Mean requests in an engine's running batch, over 50 ms samples of every engine's /metrics. */
  meanRunning: number;
  /** Mean share of an engine's KV capacity in use, same samples. */
  meanKvShare: number;
  /** Share of samples in which an engine had no running request. */
  idleShare: number;
  /** Mean requests waiting in an engine's own queue, same samples. */
  meanEngineQueued: number;
}

/** Settings of the reference-engine part. */
export interface ReferencePartOptions {
  engines: number;
  /** Steps of the run: waves of `perWave` rollouts (1 = the whole batch at once). */
  waves: number;
  perWave: number;
  /** KV capacity of each engine in tokens. */
  capacity: number;
  sandbox: SandboxPool;
  policies: readonly SchedulingPolicy[];
  /** Rounds over the policies, the order reversed every other round (load drift on a shared machine hits each alike). */
  rounds: number;
}

/** Mean of each policy's rounds (makespan and counts averaged; the peak factor is the highest). */
function meanOf(runs: readonly ReferenceResult[]): ReferenceResult {
  const avg = (f: (r: ReferenceResult) => number) => runs.reduce((s, r) => s + f(r), 0) / runs.length;
  return {
    policy: runs[0].policy,
    makespanS: avg((r) => r.makespanS),
    retractions: avg((r) => r.retractions),
    backoffs: avg((r) => r.backoffs),
    peakAdmitFactor: Math.max(...runs.map((r) => r.peakAdmitFactor)),
    waited: avg((r) => r.waited),
    peakInFlight: Math.max(...runs.map((r) => r.peakInFlight)),
    generatedTokens: avg((r) => r.generatedTokens),
    turns: avg((r) => r.turns),
    prefillTokens: avg((r) => r.prefillTokens),
    retractedTokens: avg((r) => r.retractedTokens),
    forwardPassesMax: avg((r) => r.forwardPassesMax),
    meanRunning: avg((r) => r.meanRunning),
    meanKvShare: avg((r) => r.meanKvShare),
    idleShare: avg((r) => r.idleShare),
    meanEngineQueued: avg((r) => r.meanEngineQueued),
  };
}

/** A number from Prometheus text (`name value`), 0 when absent. */
const counter = (text: string, name: string): number => Number(text.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1] ?? 0);

/** The engines' own counters: tokens prefilled (prompts + recompute) and retracted, summed; forward passes per engine. */
async function tokenCounters(urls: readonly string[]): Promise<{ prefill: number; retracted: number; passes: number[] }> {
  const texts = await Promise.all(urls.map(async (u) => (await fetch(`${u}/metrics`)).text()));
  return {
    prefill: texts.reduce((s, t) => s + counter(t, 'rstar_engine_prefill_tokens_total'), 0),
    retracted: texts.reduce((s, t) => s + counter(t, 'rstar_engine_retracted_tokens_total'), 0),
    passes: texts.map((t) => counter(t, 'rstar_engine_decode_steps_total') + counter(t, 'rstar_engine_prefill_batches_total')),
  };
}

/** Samples every engine's running batch, KV usage and own queue every 50 ms until stopped. */
function sampleEngines(adapters: readonly SglangAdapter[]): { stop: () => Promise<{ meanRunning: number; meanKvShare: number; idleShare: number; meanEngineQueued: number }> } {
  let n = 0;
  let running = 0;
  let kv = 0;
  let idle = 0;
  let queued = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void Promise.all(adapters.map((a) => a.loadStats().catch(() => null)))
      .then((xs) => {
        for (const x of xs) {
          if (!x) continue;
          n++;
          running += x.runningRequests;
          queued += x.queuedRequests;
          kv += x.kvUsedTokens / (x.kvCapacityTokens ?? 1);
          if (x.runningRequests === 0) idle++;
        }
      })
      .finally(() => { busy = false; });
  }, 50);
  return {
    stop: async () => {
      clearInterval(timer);
      const d = n || 1;
      return { meanRunning: running / d, meanKvShare: kv / d, idleShare: idle / d, meanEngineQueued: queued / d };
    },
  };
}

async function retractionsOf(adapters: readonly SglangAdapter[]): Promise<number> {
  const samples = await Promise.all(adapters.map((a) => a.loadStats()));
  return samples.reduce((s, x) => s + (x?.retractions ?? 0), 0);
}

/** Run the waves of `specs` (one array per step) under `policy` through one pool, in the η = 1 arrival. */
async function runPolicy(policy: SchedulingPolicy, adapters: readonly SglangAdapter[], urls: readonly string[], specs: readonly (readonly RolloutSpec[])[], tokenizer: ModelTokenizer, sandbox: SandboxPool): Promise<ReferenceResult> {
  const pool = await EnginePool.create(adapters, policy, { probeIntervalMs: 0 });
  let peak = 1;
  const watch = setInterval(() => {
    for (const e of pool.scheduler.snapshot()) peak = Math.max(peak, e.admitFactor ?? 1);
  }, 20);
  const before = await retractionsOf(adapters);
  const tokensBefore = await tokenCounters(urls);
  const sampler = sampleEngines(adapters);
  const deps: RolloutBatchDeps = {
    pool,
    tokenizer,
    tools: { execute: (q) => sandbox.execute({ code: q.code, input: q.input, timeoutMs: q.timeoutMs, memoryMb: q.memoryMb, session: q.session ?? undefined }) },
  };
  let inFlight = 0;
  let peakInFlight = 0;
  const t0 = Date.now();
  try {
    const waves = await submitInWaves({ waves: specs.length, perWave: specs[0].length }, async (w, i) => {
      peakInFlight = Math.max(peakInFlight, ++inFlight);
      try {
        return (await runRolloutBatch([specs[w][i]], deps))[0];
      } finally {
        inFlight--;
      }
    });
    const results = waves.flat();
    const makespanS = (Date.now() - t0) / 1000;
    const engineFigures = await sampler.stop();
    const tokensAfter = await tokenCounters(urls);
    return {
      policy,
      makespanS,
      retractions: (await retractionsOf(adapters)) - before,
      backoffs: pool.scheduler.stats.backoffs,
      peakAdmitFactor: peak,
      waited: pool.scheduler.stats.queued,
      peakInFlight,
      generatedTokens: results.reduce((a, r) => a + r.responseTokenIds.length, 0),
      turns: results.reduce((a, r) => a + r.turns, 0),
      prefillTokens: tokensAfter.prefill - tokensBefore.prefill,
      retractedTokens: tokensAfter.retracted - tokensBefore.retracted,
      forwardPassesMax: Math.max(...tokensAfter.passes.map((p, i) => p - tokensBefore.passes[i])),
      ...engineFigures,
    };
  } finally {
    void sampler.stop();
    clearInterval(watch);
    pool.close();
  }
}

/**
 * Start `o.engines` reference engines on the hf-tiny model (one torch thread each, `--kv-capacity-tokens
 * o.capacity`), run the same seeded `o.waves` waves of `o.perWave` rollouts (a quarter long, the rest
 * short) in the η = 1 arrival under each policy (`o.rounds` times, alternating the order), and stop them.
 * Returns each policy's mean figures and the workload's shape.
 */
export async function referencePart(o: ReferencePartOptions): Promise<{ results: Record<string, ReferenceResult>; workload: object }> {
  const model = await ensureTinyModel(resolve(__dirname, '../../../.rstar/models'));
  const tokenizer = ModelTokenizer.load(model);
  let engines: PythonProcess[] = [];
  try {
    engines = await Promise.all(Array.from({ length: o.engines }, () => startReferenceEngine({ model, kvCapacityTokens: o.capacity, threads: 1, env: { PYTHONPATH: resolve(__dirname, '../../../workers/trainer') } })));
    const adapters = engines.map((e, i) => new SglangAdapter(`ref-${i}`, e.url));
    const urls = engines.map((e) => e.url);
    const rand = rngFromSeed(seedOf('scheduler-bench-reference', 1));
    const long = 224;
    const short = 48;
    const flat: RolloutSpec[] = Array.from({ length: o.waves * o.perWave }, (_, i) => {
      const isLong = rand() < 0.25;
      return {
        rolloutId: `ref-bench:${i}`,
        problem: `What is ${12 + i} * ${34 + (i % 7)}?`,
        sampling: { temperature: 1, topP: 1, seed: 100 + i },
        budget: { maxTokens: isLong ? long : short, maxTurns: 2 },
        compactPrompt: true,
      };
    });
    const specs = Array.from({ length: o.waves }, (_, w) => flat.slice(w * o.perWave, (w + 1) * o.perWave));
    // Warm-up, not measured: the whole run once, so that each engine has run batches and KV lengths as
    // large as the measured runs' (torch is slow the first time it meets a shape; with a warm-up of a few
    // rollouts the first measured run of the process paid 1.4-1.7x, and that run was always the same policy's).
    await runPolicy('least-requests', adapters, urls, specs.map((wave) => wave.map((s) => ({ ...s, rolloutId: `warm:${s.rolloutId}` }))), tokenizer, o.sandbox);
    const runs = new Map<SchedulingPolicy, ReferenceResult[]>(o.policies.map((p) => [p, []]));
    for (let round = 0; round < o.rounds; round++) {
      for (const policy of round % 2 === 0 ? o.policies : [...o.policies].reverse()) {
        const r = await runPolicy(policy, adapters, urls, specs, tokenizer, o.sandbox);
        runs.get(policy)?.push(r);
        process.stderr.write(`reference round ${round + 1} ${policy}: ${JSON.stringify(r)}\n`);
      }
    }
    const results: Record<string, ReferenceResult> = {};
    for (const [policy, rs] of runs) results[policy] = meanOf(rs);
    return { results, workload: { engines: o.engines, waves: o.waves, perWave: o.perWave, arrival: 'eta=1: next wave at half of the current one, at most two in flight', kvCapacityTokens: o.capacity, rounds: o.rounds, longShare: 0.25, longMaxTokens: long, shortMaxTokens: short, model: 'hf-tiny (random init; replies run to their budget)' } };
  } finally {
    await Promise.all(engines.map((e) => e.stop().catch(() => undefined)));
  }
}
