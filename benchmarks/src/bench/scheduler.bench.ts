import { renderPrompt, type RolloutSpec, type Tokenizer } from '@rstar/agent';
import { generateTasks, runSft } from '@rstar/policy';
import { EnginePool, RolloutScheduler, SglangAdapter, startBuiltinEngine, type BuiltinEngine, type Lease, type SchedulingPolicy } from '@rstar/engines';
import { runRolloutBatch } from '@rstar/rollouts';
import { SandboxPool } from '@rstar/sandbox';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rngFromSeed, seedOf } from '@rstar/grpo';
import { findWorkersPython } from '@rstar/workers';
import { referencePart, type ReferenceResult } from './scheduler.reference';

/*
 * `pnpm bench scheduler`: KV-aware vs least-requests vs round-robin rollout scheduling (docs/design/protocol.md §7).
 * Part 1 runs real rollouts on reference engines of workers/trainer (which retract and recompute past
 * their KV capacity, as SGLang does), the rollouts arriving as an asynchronous run with η = 1 submits them
 * (the next step's wave when half of the current one has finished; scheduler.reference.ts), and on several
 * built-in engines (which never preempt, all rollouts at once); part 2 is a discrete-event simulation of a
 * 64-engine cluster with a per-token latency model calibrated on the built-in engines.
 * Headline keys (issue 26's goal): `makespan_ratio_kv_vs_least_requests` = makespan of `kv-adaptive` / that
 * of least-requests on the reference engines, goal < 1, with `retractions_kv` < `retractions_least_requests`
 * (the engines' own counters, mean per run) in the same run; null when the workers' Python is not set up.
 * The built-in engines' reservation figures are under `builtin_*`, the simulation's under `sim_*`.
 * The simulated engine below is a benchmark tool only: it drives the product's RolloutScheduler, but it
 * is never exported and never serves a rollout.
 */

// ---------------------------------------------------------------- workload (seeded, skewed)

/** The seeded PRNG of @rstar/grpo, so every policy sees the same workload. */
const prng = (seed: number): (() => number) => rngFromSeed(seedOf('scheduler-bench', seed));

function lognormal(rand: () => number, median: number, sigma: number): number {
  const u = Math.max(rand(), 1e-12);
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
  return median * Math.exp(sigma * z);
}

/** One simulated rollout: its turns' generated tokens and the tool-response tokens (and tool latency) after each. */
interface SimRollout {
  id: string;
  prompt: number;
  turns: { gen: number; tool: number; toolMs: number }[];
}

/**
 * Agentic-RL-shaped workload: turn counts skewed (most rollouts 1-3 turns, a tail to `maxTurns`), tokens
 * per turn log-normal with a heavy tail, tool responses 40-200 tokens, tool latency log-normal around
 * 0.3 s (rStar2's mean); every rollout stays within `budget` (a turn cut at the budget ends it).
 */
export function makeWorkload(n: number, o: { budget: number; prompt: number; maxTurns: number; genMedian: number; seed: number }): SimRollout[] {
  const rand = prng(o.seed);
  return Array.from({ length: n }, (_, i) => {
    const nTurns = Math.min(o.maxTurns, 1 + Math.floor(-Math.log(Math.max(rand(), 1e-12)) * 1.6));
    const turns: SimRollout['turns'] = [];
    let used = 0;
    for (let t = 0; t < nTurns; t++) {
      let gen = Math.max(8, Math.round(lognormal(rand, o.genMedian, 1.0)));
      if (used + gen >= o.budget) gen = o.budget - used;
      used += gen;
      const last = t === nTurns - 1 || used >= o.budget;
      const tool = last ? 0 : 40 + Math.floor(rand() * 160);
      if (!last && used + tool >= o.budget) {
        turns.push({ gen, tool: 0, toolMs: 0 });
        break;
      }
      used += tool;
      turns.push({ gen, tool, toolMs: last ? 0 : lognormal(rand, 250, 0.6) });
      if (last) break;
    }
    return { id: `sim:${i}`, prompt: o.prompt, turns };
  });
}

// ---------------------------------------------------------------- simulated engine (bench-only)

/** Per-decode-step latency model: `baseMs + perSeqMs * batch + perKvTokenMs * kvTokens`; prefill per token. */
export interface LatencyModel {
  baseMs: number;
  perSeqMs: number;
  perKvTokenMs: number;
  prefillPerTokenMs: number;
}

interface SimRequest {
  rid: string;
  /** Context tokens the request needs in KV when admitted (prompt + everything so far). */
  ctx: number;
  remaining: number;
  onDone: (t: number) => void;
}

/**
 * A continuous-batching engine with a KV cache of `capacity` tokens: all admitted requests advance one
 * token per step; idle rollouts' prefixes stay cached until space is needed (LRU eviction, then the
 * rollout pays a full prefill); a request is admitted only when its context fits; when decoding grows the
 * active KV past capacity the newest request is preempted and re-queued (its KV recomputed later).
 */
class SimEngine {
  private readonly active = new Map<string, SimRequest>();
  private readonly cached = new Map<string, number>();
  private readonly queue: SimRequest[] = [];
  private activeKv = 0;
  private cachedKv = 0;
  private last = 0;
  private stepMs = 0;
  next = Infinity;
  busyMs = 0;
  peakKv = 0;
  requeued = 0;

  constructor(readonly id: string, readonly capacity: number, private readonly lat: LatencyModel) {}

  submit(t: number, req: SimRequest): void {
    this.sync(t);
    this.queue.push(req);
    this.admit();
    this.reschedule();
  }

  /** Process the internal event due at `t` (completions, overflow). */
  fire(t: number): void {
    this.sync(t);
    const done: SimRequest[] = [];
    for (const r of this.active.values()) if (r.remaining <= 0) done.push(r);
    for (const r of done) {
      this.active.delete(r.rid);
      this.activeKv -= r.ctx;
      this.cached.set(r.rid, r.ctx);
      this.cachedKv += r.ctx;
    }
    this.fit();
    this.admit();
    this.reschedule();
    for (const r of done) r.onDone(t);
  }

  /** Forget a finished rollout's cached prefix. */
  drop(rid: string): void {
    const c = this.cached.get(rid);
    if (c !== undefined) {
      this.cached.delete(rid);
      this.cachedKv -= c;
    }
  }

  private sync(t: number): void {
    if (this.active.size === 0 || this.stepMs === 0) {
      this.last = Math.max(this.last, t);
      return;
    }
    if (t <= this.last) return;
    const k = Math.floor((t - this.last) / this.stepMs + 1e-9);
    if (k <= 0) return;
    for (const r of this.active.values()) {
      const s = Math.min(k, r.remaining);
      r.remaining -= s;
      r.ctx += s;
      this.activeKv += s;
    }
    this.busyMs += k * this.stepMs;
    this.last += k * this.stepMs;
    this.peakKv = Math.max(this.peakKv, this.activeKv);
  }

  /** Evict cached prefixes, then preempt the newest active requests, until the KV fits. */
  private fit(): void {
    for (const [rid, c] of this.cached) {
      if (this.activeKv + this.cachedKv <= this.capacity) break;
      this.cached.delete(rid);
      this.cachedKv -= c;
    }
    while (this.activeKv > this.capacity && this.active.size > 1) {
      const newest = [...this.active.values()].at(-1) as SimRequest;
      this.active.delete(newest.rid);
      this.activeKv -= newest.ctx;
      this.queue.unshift(newest);
      this.requeued++;
    }
  }

  private admit(): void {
    while (this.queue.length > 0) {
      const q = this.queue[0];
      const hit = this.cached.get(q.rid) ?? 0;
      if (hit) {
        this.cached.delete(q.rid);
        this.cachedKv -= hit;
      }
      if (this.activeKv + q.ctx > this.capacity && this.active.size > 0) {
        if (hit) { this.cached.set(q.rid, hit); this.cachedKv += hit; }
        break;
      }
      this.queue.shift();
      // Evict other cached prefixes (LRU) to make room for the new context.
      for (const [rid, c] of this.cached) {
        if (this.activeKv + q.ctx + this.cachedKv <= this.capacity) break;
        this.cached.delete(rid);
        this.cachedKv -= c;
      }
      const prefill = (q.ctx - Math.min(hit, q.ctx)) * this.lat.prefillPerTokenMs;
      this.last += prefill;
      this.busyMs += prefill;
      this.active.set(q.rid, q);
      this.activeKv += q.ctx;
      this.peakKv = Math.max(this.peakKv, this.activeKv);
    }
  }

  private reschedule(): void {
    const n = this.active.size;
    if (n === 0) {
      this.next = Infinity;
      this.stepMs = 0;
      return;
    }
    this.stepMs = this.lat.baseMs + this.lat.perSeqMs * n + this.lat.perKvTokenMs * this.activeKv;
    let kDone = Infinity;
    for (const r of this.active.values()) kDone = Math.min(kDone, r.remaining);
    const kOverflow = n > 1 && this.activeKv + n * kDone > this.capacity ? Math.max(1, Math.floor((this.capacity - this.activeKv) / n) + 1) : Infinity;
    this.next = this.last + Math.max(0, Math.min(kDone, kOverflow)) * this.stepMs;
  }
}

/** A tiny binary min-heap of timed callbacks. */
class TimerHeap {
  private readonly h: { t: number; seq: number; fn: () => void }[] = [];
  private seq = 0;
  push(t: number, fn: () => void): void {
    const h = this.h;
    h.push({ t, seq: this.seq++, fn });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(h[p], h[i])) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }
  peek(): number {
    return this.h.length ? this.h[0].t : Infinity;
  }
  pop(): () => void {
    const h = this.h;
    const top = h[0];
    const end = h.pop() as (typeof h)[number];
    if (h.length) {
      h[0] = end;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l], h[m])) m = l;
        if (r < h.length && this.less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top.fn;
  }
  private less(a: { t: number; seq: number }, b: { t: number; seq: number }): boolean {
    return a.t < b.t || (a.t === b.t && a.seq < b.seq);
  }
}

/** Figures of one simulated run. */
export interface SimResult {
  policy: SchedulingPolicy;
  makespanS: number;
  idleShare: number;
  peakKvShare: number;
  requeued: number;
  kvOverflows: number;
  waited: number;
}

/**
 * Simulate `workload` on `engines` engines of `capacity` KV tokens under `policy`, driving the product
 * {@link RolloutScheduler} (reserve prompt + budget, sticky, release on exit). Returns makespan and load figures.
 */
export function simulateCluster(workload: readonly SimRollout[], o: { policy: SchedulingPolicy; engines: number; capacity: number; budget: number; lat: LatencyModel }): SimResult {
  const engines = Array.from({ length: o.engines }, (_, i) => new SimEngine(`sim-e${i}`, o.capacity, o.lat));
  const byId = new Map(engines.map((e) => [e.id, e]));
  const sched = new RolloutScheduler(o.policy, engines.map((e) => ({ id: e.id, capacity: e.capacity })));
  const timers = new TimerHeap();
  const byRollout = new Map(workload.map((r) => [r.id, r]));
  let finished = 0;
  let now = 0;
  // Least-requests is a per-request load balancer (as routers do); kv-budget and round-robin are sticky.
  const perTurn = o.policy === 'least-requests';

  const runTurn = (t: number, r: SimRollout, turn: number, ctx: number, lease: Lease): void => {
    const eng = byId.get(lease.engineId) as SimEngine;
    sched.requestStarted(eng.id);
    eng.submit(t, {
      rid: r.id,
      ctx,
      remaining: r.turns[turn].gen,
      onDone: (td) => {
        sched.requestEnded(eng.id);
        const spec = r.turns[turn];
        const after = ctx + spec.gen;
        if (turn + 1 >= r.turns.length || spec.tool === 0) {
          for (const x of engines) x.drop(r.id);
          finished++;
          for (const g of sched.release(r.id)) start(td, g);
          return;
        }
        const tn = td + spec.toolMs;
        if (!perTurn) {
          timers.push(tn, () => runTurn(tn, r, turn + 1, after + spec.tool, lease));
          return;
        }
        // A request-level load balancer: the next turn goes wherever the policy says (prefix cache lost on a move).
        for (const g of sched.release(r.id)) start(td, g);
        timers.push(tn, () => {
          const next = sched.acquire(r.id, r.prompt + o.budget) as Lease;
          runTurn(tn, r, turn + 1, after + spec.tool, next);
        });
      },
    });
  };
  const start = (t: number, lease: Lease): void => {
    const r = byRollout.get(lease.rolloutId) as SimRollout;
    runTurn(t, r, 0, r.prompt, lease);
  };

  for (const r of workload) {
    const lease = sched.acquire(r.id, r.prompt + o.budget);
    if (lease) start(0, lease);
  }
  while (finished < workload.length) {
    let e: SimEngine | null = null;
    for (const x of engines) if (x.next < (e?.next ?? Infinity)) e = x;
    const tTimer = timers.peek();
    if (e === null && tTimer === Infinity) throw new Error(`simulation stalled with ${workload.length - finished} rollouts left`);
    if (e !== null && e.next <= tTimer) {
      now = e.next;
      e.fire(now);
    } else {
      now = tTimer;
      timers.pop()();
    }
  }
  const busy = engines.reduce((s, e) => s + Math.min(e.busyMs, now), 0);
  return {
    policy: o.policy,
    makespanS: now / 1000,
    idleShare: 1 - busy / (now * engines.length),
    peakKvShare: Math.max(...engines.map((e) => e.peakKv)) / o.capacity,
    requeued: engines.reduce((s, e) => s + e.requeued, 0),
    kvOverflows: sched.stats.overflows,
    waited: sched.stats.queued,
  };
}

// ---------------------------------------------------------------- part 1: real built-in engines

/** Figures of one real run. */
interface RealResult {
  policy: SchedulingPolicy;
  makespanS: number;
  idleShare: number;
  peakKvShare: number;
  /** Arrivals into the engines' own queues (waiting for KV room or for the running batch), sampled every 2 ms. */
  engineQueuedRequests: number;
  kvOverflows: number;
  waited: number;
  evicted: number;
  turns: number;
  toolCalls: number;
}

async function realRun(policy: SchedulingPolicy, o: { engines: BuiltinEngine[]; capacity: number; specs: RolloutSpec[]; tokenizer: Tokenizer; sandbox: SandboxPool }): Promise<RealResult> {
  const adapters = o.engines.map((e, i) => new SglangAdapter(`builtin-${i}`, e.url, undefined, 'builtin'));
  const pool = await EnginePool.create(adapters, policy, { probeIntervalMs: 0 });
  let idle = 0;
  let samples = 0;
  let peak = 0;
  let queued = 0;
  const lastQueued = o.engines.map(() => 0);
  const probe = setInterval(() => {
    o.engines.forEach((e, i) => {
      const st = e.scheduler.stats();
      samples++;
      if (st.running === 0) idle++;
      peak = Math.max(peak, st.kvTokensInUse / o.capacity);
      if (st.queued > lastQueued[i]) queued += st.queued - lastQueued[i];
      lastQueued[i] = st.queued;
    });
  }, 2);
  const t0 = Date.now();
  try {
    const results = await runRolloutBatch(o.specs, {
      pool,
      tokenizer: o.tokenizer,
      tools: { execute: (q) => o.sandbox.execute({ code: q.code, input: q.input, timeoutMs: q.timeoutMs, memoryMb: q.memoryMb, session: q.session ?? undefined }) },
    });
    return {
      policy,
      makespanS: (Date.now() - t0) / 1000,
      idleShare: samples ? idle / samples : 0,
      peakKvShare: peak,
      engineQueuedRequests: queued,
      kvOverflows: pool.scheduler.stats.overflows,
      waited: pool.scheduler.stats.queued,
      evicted: pool.scheduler.stats.evicted,
      turns: results.reduce((a, r) => a + r.turns, 0),
      toolCalls: results.reduce((a, r) => a + r.toolCalls, 0),
    };
  } finally {
    clearInterval(probe);
    pool.close();
  }
}

/** Fit `step = base + perSeq * batch` and the prefill cost per token on one built-in engine. */
async function calibrate(engine: BuiltinEngine, tokenizer: Tokenizer): Promise<LatencyModel> {
  const prompt = tokenizer.encode(renderPrompt('What is 12 * 34?', { compact: true }));
  const gen = async (batch: number, newTokens: number, inputIds: number[]) => {
    const t0 = performance.now();
    const r = await fetch(`${engine.url}/generate`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input_ids: Array.from({ length: batch }, () => inputIds), sampling_params: { temperature: 1, max_new_tokens: newTokens, ignore_eos: true, seed: 1 } }),
    });
    await r.text();
    return performance.now() - t0;
  };
  await gen(1, 4, prompt); // warm-up
  const steps = 32;
  const t1 = (await gen(1, steps, prompt)) / steps;
  const t8 = (await gen(8, steps, prompt)) / steps;
  const perSeqMs = Math.max(0, (t8 - t1) / 7);
  const baseMs = Math.max(0.1, t1 - perSeqMs);
  const long = Array.from({ length: 100 }, (_, i) => prompt[i % prompt.length]);
  const prefillPerTokenMs = Math.max(0, ((await gen(1, 1, long)) - (await gen(1, 1, prompt.slice(0, 8)))) / (long.length - 8));
  return { baseMs, perSeqMs, perKvTokenMs: 0, prefillPerTokenMs };
}

// ---------------------------------------------------------------- entry

function arg(args: string[], name: string, def: number): number {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = Number(args[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number, got "${args[i + 1]}"`);
  return v;
}

/**
 * Run the benchmark. Flags: --engines (3), --rollouts (96), --capacity (KV tokens per built-in engine, 450),
 * --sft-steps (120; the policy is SFT'd briefly so it writes tool calls), --sim-engines (64),
 * --sim-rollouts (16384), --sim-capacity (200000), --sim-budget (8192); reference engines (skipped, with
 * their figures null, when the workers' Python is not set up): --ref-engines (3), --ref-waves (steps of the
 * η = 1 arrival, 4; 1 = the whole batch at once), --ref-per-wave (rollouts per step, 32), --ref-capacity
 * (KV tokens per reference engine, 1200), --ref-rounds (3). A short run (about a third of the time):
 * --sft-steps 30 --rollouts 48 --sim-rollouts 2048 --ref-rounds 1.
 */
export async function run(args: string[]): Promise<object> {
  const nEngines = arg(args, 'engines', 3);
  const nRollouts = arg(args, 'rollouts', 96);
  const capacity = arg(args, 'capacity', 450);
  const sftSteps = arg(args, 'sft-steps', 120);
  const simEngines = arg(args, 'sim-engines', 64);
  const simRollouts = arg(args, 'sim-rollouts', 16_384);
  const simCapacity = arg(args, 'sim-capacity', 200_000);
  const simBudget = arg(args, 'sim-budget', 8192);
  const refEngines = arg(args, 'ref-engines', 3);
  const refWaves = arg(args, 'ref-waves', 4);
  const refPerWave = arg(args, 'ref-per-wave', 32);
  const refCapacity = arg(args, 'ref-capacity', 1200);
  const refRounds = arg(args, 'ref-rounds', 3);

  const tmp = mkdtempSync(join(tmpdir(), 'rstar-bench-sched-'));
  const sandbox = new SandboxPool({ workers: 2 });
  await sandbox.start();
  let engines: BuiltinEngine[] = [];
  const real: Record<string, RealResult> = {};
  let reference: Awaited<ReturnType<typeof referencePart>> | null = null;
  let lat: LatencyModel;
  try {
    process.stderr.write(`SFT of the tiny policy (${sftSteps} steps) so that it writes tool calls...\n`);
    const sft = await runSft({ preset: 'smoke', steps: sftSteps, trainSize: 256, heldOutSize: 4, outDir: join(tmp, 'ckpt'), seed: 3, execute: (q) => sandbox.execute(q) });
    const tokenizer = sft.model.tokenizer;
    const context = sft.model.config.context;
    sft.model.dispose();
    engines = await Promise.all(Array.from({ length: nEngines }, (_, i) => startBuiltinEngine({ port: 0, checkpointDir: join(tmp, 'ckpt'), kvCapacityTokens: capacity, seed: 20 + i, batchWindowMs: 2 })));
    lat = await calibrate(engines[0], tokenizer);
    process.stderr.write(`calibrated latency model: ${JSON.stringify(lat)}\n`);
    // Skewed mix as in agentic RL: most rollouts short (small budget, 1-2 turns), a tail long (large budget, more turns).
    const rand = prng(11);
    const problems = generateTasks({ seed: 5, n: 16 }).map((t) => t.problem);
    const specs: RolloutSpec[] = Array.from({ length: nRollouts }, (_, i) => {
      const long = rand() < 0.25;
      const prompt = tokenizer.encode(renderPrompt(problems[i % problems.length], { compact: true })).length;
      return {
        rolloutId: `bench:${i}`,
        problem: problems[i % problems.length],
        sampling: { temperature: long ? 1 : 0.3, topP: 1, seed: i },
        budget: { maxTokens: long ? context - prompt : Math.min(48, context - prompt), maxTurns: long ? 6 : 2 },
        compactPrompt: true,
      };
    });
    for (const policy of ['kv-budget', 'least-requests', 'round-robin'] as const) {
      real[policy] = await realRun(policy, { engines, capacity, specs, tokenizer, sandbox });
      process.stderr.write(`real ${policy}: ${JSON.stringify(real[policy])}\n`);
    }
    await Promise.all(engines.map((e) => e.close().catch(() => undefined)));
    engines = [];
    if (findWorkersPython()) {
      reference = await referencePart({ engines: refEngines, waves: refWaves, perWave: refPerWave, capacity: refCapacity, rounds: refRounds, sandbox, policies: ['kv-adaptive', 'least-requests', 'kv-budget'] });
    } else {
      process.stderr.write('reference engines skipped: the workers Python is not set up (workers/setup.sh)\n');
    }
  } finally {
    await Promise.all(engines.map((e) => e.close().catch(() => undefined)));
    await sandbox.close();
    rmSync(tmp, { recursive: true, force: true });
  }

  const ref: Record<string, ReferenceResult> | null = reference?.results ?? null;
  const workload = makeWorkload(simRollouts, { budget: simBudget, prompt: 300, maxTurns: 10, genMedian: 450, seed: 7 });
  const sim: Record<string, SimResult> = {};
  for (const policy of ['kv-budget', 'least-requests', 'round-robin'] as const) {
    const t0 = Date.now();
    sim[policy] = simulateCluster(workload, { policy, engines: simEngines, capacity: simCapacity, budget: simBudget, lat });
    process.stderr.write(`sim ${policy}: ${JSON.stringify(sim[policy])} (${Date.now() - t0} ms wall)\n`);
  }
  return {
    bench: 'scheduler',
    // Reference engines (retract past capacity), η = 1 wave arrival: kv-adaptive vs least-requests (the goal).
    makespan_ratio_kv_vs_least_requests: ref ? ref['kv-adaptive'].makespanS / ref['least-requests'].makespanS : null,
    retractions_kv: ref ? ref['kv-adaptive'].retractions : null,
    retractions_least_requests: ref ? ref['least-requests'].retractions : null,
    forward_passes_ratio_kv_vs_least_requests: ref ? ref['kv-adaptive'].forwardPassesMax / ref['least-requests'].forwardPassesMax : null,
    // Same engines and arrival, plain reservation (rStar2's kv-budget).
    reference_makespan_ratio_kv_budget_vs_least_requests: ref ? ref['kv-budget'].makespanS / ref['least-requests'].makespanS : null,
    reference_forward_passes_ratio_kv_budget_vs_least_requests: ref ? ref['kv-budget'].forwardPassesMax / ref['least-requests'].forwardPassesMax : null,
    retractions_kv_budget: ref ? ref['kv-budget'].retractions : null,
    // Built-in engines (never preempt), whole batch at once: plain reservation.
    builtin_makespan_ratio_kv_budget_vs_least_requests: real['kv-budget'].makespanS / real['least-requests'].makespanS,
    builtin_makespan_ratio_kv_budget_vs_round_robin: real['kv-budget'].makespanS / real['round-robin'].makespanS,
    builtin_kv_budget_overflows: real['kv-budget'].kvOverflows,
    sim_makespan_ratio_kv_budget_vs_least_requests: sim['kv-budget'].makespanS / sim['least-requests'].makespanS,
    sim_kv_budget_overflows: sim['kv-budget'].kvOverflows,
    real,
    reference,
    sim,
    latency_model: lat,
    notes:
      'real: built-in engines share this process (one CPU thread), so engines do not compute in parallel; every policy is sticky per rollout in the pool. ' +
      'reference: reference engines (workers/trainer, hf-tiny, one torch thread each, separate processes) admit optimistically and retract past their KV capacity (SGLang\'s rule; a retracted request is recomputed by a prefill of its prompt and output); retractions are the engines\' own counters, averaged over rounds after an unmeasured warm-up pass of the whole batch. ' +
      'The reference rollouts arrive as an async run with eta = 1 submits them: one step per wave, the next wave when half of the current one has finished and all of the one before (two steps in flight), through one pool; the built-in part submits its whole batch at once. ' +
      'kv-adaptive admits by the projected KV peak (every rollout running to its budget, progress from the engine\'s observed KV usage), longest budget first, and backs off on retractions; forward_passes = model forward passes of the busiest engine, the makespan in engine work, which machine load does not move. ' +
      'sim: least-requests routes each turn (prefix cache lost on a move), kv-budget and round-robin are sticky; kv-budget reserves prompt + full budget.',
  };
}
