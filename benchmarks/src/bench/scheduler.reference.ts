import { ModelTokenizer, type RolloutSpec } from '@rstar/agent';
import { EnginePool, SglangAdapter, type SchedulingPolicy } from '@rstar/engines';
import { runRolloutBatch } from '@rstar/rollouts';
import type { SandboxPool } from '@rstar/sandbox';
import { ensureTinyModel, startReferenceEngine, type PythonProcess } from '@rstar/workers';
import { rngFromSeed, seedOf } from '@rstar/grpo';
import { resolve } from 'node:path';

/*
 * Part 1b of `pnpm bench scheduler`: the same rollout batch on reference engines (workers/trainer), which
 * admit optimistically and retract + recompute requests past their KV capacity as SGLang does, so a
 * scheduler that overloads an engine pays for it. The KV capacity is set below what the batch needs at once.
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
  /** Model tokens generated in the run (the same work under every policy; seeded sampling). */
  generatedTokens: number;
  turns: number;
}

/** Settings of the reference-engine part. */
export interface ReferencePartOptions {
  engines: number;
  rollouts: number;
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
    generatedTokens: avg((r) => r.generatedTokens),
    turns: avg((r) => r.turns),
  };
}

async function retractionsOf(adapters: readonly SglangAdapter[]): Promise<number> {
  const samples = await Promise.all(adapters.map((a) => a.loadStats()));
  return samples.reduce((s, x) => s + (x?.retractions ?? 0), 0);
}

async function runPolicy(policy: SchedulingPolicy, adapters: readonly SglangAdapter[], specs: readonly RolloutSpec[], tokenizer: ModelTokenizer, sandbox: SandboxPool): Promise<ReferenceResult> {
  const pool = await EnginePool.create(adapters, policy, { probeIntervalMs: 0 });
  let peak = 1;
  const watch = setInterval(() => {
    for (const e of pool.scheduler.snapshot()) peak = Math.max(peak, e.admitFactor ?? 1);
  }, 20);
  const before = await retractionsOf(adapters);
  const t0 = Date.now();
  try {
    const results = await runRolloutBatch(specs, {
      pool,
      tokenizer,
      tools: { execute: (q) => sandbox.execute({ code: q.code, input: q.input, timeoutMs: q.timeoutMs, memoryMb: q.memoryMb, session: q.session ?? undefined }) },
    });
    const makespanS = (Date.now() - t0) / 1000;
    return {
      policy,
      makespanS,
      retractions: (await retractionsOf(adapters)) - before,
      backoffs: pool.scheduler.stats.backoffs,
      peakAdmitFactor: peak,
      waited: pool.scheduler.stats.queued,
      generatedTokens: results.reduce((a, r) => a + r.responseTokenIds.length, 0),
      turns: results.reduce((a, r) => a + r.turns, 0),
    };
  } finally {
    clearInterval(watch);
    pool.close();
  }
}

/**
 * Start `o.engines` reference engines on the hf-tiny model (one torch thread each, `--kv-capacity-tokens
 * o.capacity`), run the same seeded batch of `o.rollouts` rollouts (a quarter long, the rest short) under
 * each policy (`o.rounds` times, alternating the order), and stop them. Returns each policy's mean figures
 * and the workload's shape.
 */
export async function referencePart(o: ReferencePartOptions): Promise<{ results: Record<string, ReferenceResult>; workload: object }> {
  const model = await ensureTinyModel(resolve(__dirname, '../../../.rstar/models'));
  const tokenizer = ModelTokenizer.load(model);
  let engines: PythonProcess[] = [];
  try {
    engines = await Promise.all(Array.from({ length: o.engines }, () => startReferenceEngine({ model, kvCapacityTokens: o.capacity, threads: 1 })));
    const adapters = engines.map((e, i) => new SglangAdapter(`ref-${i}`, e.url));
    const rand = rngFromSeed(seedOf('scheduler-bench-reference', 1));
    const long = 224;
    const short = 48;
    const specs: RolloutSpec[] = Array.from({ length: o.rollouts }, (_, i) => {
      const isLong = rand() < 0.25;
      return {
        rolloutId: `ref-bench:${i}`,
        problem: `What is ${12 + i} * ${34 + (i % 7)}?`,
        sampling: { temperature: 1, topP: 1, seed: 100 + i },
        budget: { maxTokens: isLong ? long : short, maxTurns: 2 },
        compactPrompt: true,
      };
    });
    // Warm-up (torch's first batches are slow), not measured.
    await runPolicy('least-requests', adapters, specs.slice(0, o.engines * 2).map((s) => ({ ...s, rolloutId: `warm:${s.rolloutId}` })), tokenizer, o.sandbox);
    const runs = new Map<SchedulingPolicy, ReferenceResult[]>(o.policies.map((p) => [p, []]));
    for (let round = 0; round < o.rounds; round++) {
      for (const policy of round % 2 === 0 ? o.policies : [...o.policies].reverse()) {
        const r = await runPolicy(policy, adapters, specs, tokenizer, o.sandbox);
        runs.get(policy)?.push(r);
        process.stderr.write(`reference round ${round + 1} ${policy}: ${JSON.stringify(r)}\n`);
      }
    }
    const results: Record<string, ReferenceResult> = {};
    for (const [policy, rs] of runs) results[policy] = meanOf(rs);
    return { results, workload: { engines: o.engines, rollouts: o.rollouts, kvCapacityTokens: o.capacity, rounds: o.rounds, longShare: 0.25, longMaxTokens: long, shortMaxTokens: short, model: 'hf-tiny (random init; replies run to their budget)' } };
  } finally {
    await Promise.all(engines.map((e) => e.stop().catch(() => undefined)));
  }
}
