import { RolloutScheduler, type Lease, type SchedulingPolicy } from '@rstar/policy-serving';

/*
 * `pnpm bench scheduler`: KV-budget vs least-requests vs round-robin rollout scheduling (PROTOCOL §7).
 * Part 1 runs real rollouts on several built-in engines (when the built-in engine is available); part 2 is
 * a discrete-event simulation of a 64-engine cluster with a per-token latency model calibrated on part 1.
 * The simulated engine below is a benchmark tool only: it drives the product's RolloutScheduler, but it
 * is never exported and never serves a rollout.
 */

// ---------------------------------------------------------------- workload (seeded, skewed)

/** mulberry32: a small seeded PRNG, so every policy sees the same workload. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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

// ---------------------------------------------------------------- entry

function arg(args: string[], name: string, def: number): number {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = Number(args[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number, got "${args[i + 1]}"`);
  return v;
}

/** Run the benchmark; flags: --sim-engines, --sim-rollouts, --sim-capacity, --sim-budget. */
export async function run(args: string[]): Promise<object> {
  const simEngines = arg(args, 'sim-engines', 64);
  const simRollouts = arg(args, 'sim-rollouts', 16_384);
  const simCapacity = arg(args, 'sim-capacity', 200_000);
  const simBudget = arg(args, 'sim-budget', 8192);
  const lat: LatencyModel = { baseMs: 12, perSeqMs: 0.15, perKvTokenMs: 0.00002, prefillPerTokenMs: 0.02 };
  const workload = makeWorkload(simRollouts, { budget: simBudget, prompt: 300, maxTurns: 10, genMedian: 450, seed: 7 });
  const sim: Record<string, SimResult> = {};
  for (const policy of ['kv-budget', 'least-requests', 'round-robin'] as const) {
    const t0 = Date.now();
    sim[policy] = simulateCluster(workload, { policy, engines: simEngines, capacity: simCapacity, budget: simBudget, lat });
    process.stderr.write(`sim ${policy}: ${JSON.stringify(sim[policy])} (${Date.now() - t0} ms wall)\n`);
  }
  return {
    bench: 'scheduler',
    sim_makespan_ratio_kv_vs_least_requests: sim['kv-budget'].makespanS / sim['least-requests'].makespanS,
    sim,
  };
}
