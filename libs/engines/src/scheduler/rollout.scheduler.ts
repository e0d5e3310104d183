import { NoEngineError, ReservationTooLargeError } from '../engine.errors';
import { freeBudget, pickEngine, type EngineLoad, type SchedulingPolicy } from './engine.picker';
import { admissionCeiling, DEFAULT_ADMISSION, INITIAL_ADMISSION, nextAdmission, type AdmissionSettings, type AdmissionState } from './kv-admission.controller';
import { generatedBy, projectedPeak, stepRateFromUsage, type KvTrajectory, type RunningRequest } from './kv-projection';

/** A rollout's reservation: it runs every turn on `engineId` and holds `tokens` of its KV cache. */
export interface Lease {
  rolloutId: string;
  engineId: string;
  tokens: number;
}

/** What `kv-adaptive` knows of a rollout it placed: its first prompt and its context after its last turn (tokens). */
interface LeaseKv {
  prompt: number;
  context: number;
}

/** A waiter: its reservation (prompt + budget) and its first prompt (tokens). */
interface Waiter {
  rolloutId: string;
  tokens: number;
  prompt: number;
}

/** Counters for dashboards and the scheduler benchmark. */
export interface SchedulerStats {
  /** Grants that pushed an engine's reservations past its capacity (never under `kv-budget`; on purpose under `kv-adaptive`). */
  overflows: number;
  /** Retractions the engines reported while observed ({@link RolloutScheduler.observe}), summed over engines. */
  retractions: number;
  /** Times `kv-adaptive` lowered an engine's admission factor (a retraction or the high-water mark). */
  backoffs: number;
  /** Rollouts that had to wait for capacity. */
  queued: number;
  /** Leases moved off an engine that went down. */
  evicted: number;
  /** Highest reserved tokens per engine. */
  peakReserved: Record<string, number>;
}

/**
 * The rollout scheduler's state (docs/design/protocol.md §7), synchronous and free of I/O and time: callers pass in
 * every event (acquire, release, request start/end, engine up/down) and get grants back. Waiting
 * rollouts form a FIFO queue served first-fit when capacity frees (a large rollout at the head does not
 * block smaller ones behind it). Evicted rollouts (their engine went down) re-enter at the head.
 */
const USED_WINDOW = 128;

export class RolloutScheduler {
  private readonly engines: EngineLoad[];
  private readonly leases = new Map<string, Lease>();
  private queue: Waiter[] = [];
  private cursor = 0;
  private readonly admission = new Map<string, AdmissionState>();
  /** Engines a lease left since their admission factor last grew (turnover paces growth). */
  private readonly turnedOver = new Set<string>();
  /** Mean KV held / reserved tokens of the last finished rollouts (ring of {@link USED_WINDOW}). */
  private readonly usedShares: number[] = [];
  /** `kv-adaptive`: prompt and context of each lease, the request in flight per rollout, each engine's decode rate (steps/ms). */
  private readonly leaseKv = new Map<string, LeaseKv>();
  private readonly running = new Map<string, RunningRequest & { engineId: string }>();
  private readonly stepRate = new Map<string, number>();
  /** Latest time (ms) an event carried: the projection's "now". */
  private now = 0;
  readonly stats: SchedulerStats = { overflows: 0, retractions: 0, backoffs: 0, queued: 0, evicted: 0, peakReserved: {} };

  /** @throws NoEngineError when `engines` is empty or a capacity is not positive. */
  constructor(
    readonly policy: SchedulingPolicy,
    engines: readonly { id: string; capacity: number }[],
    /** Feedback settings of `kv-adaptive` (ignored by the other policies). */
    private readonly admissionSettings: AdmissionSettings = DEFAULT_ADMISSION,
  ) {
    if (engines.length === 0) throw new NoEngineError('the scheduler needs at least one engine');
    for (const e of engines) if (!(e.capacity > 0)) throw new NoEngineError(`engine ${e.id} reports KV capacity ${e.capacity}; it must be positive`);
    this.engines = engines.map((e) => ({ id: e.id, capacity: e.capacity, reserved: 0, leases: 0, outstanding: 0, up: true }));
    for (const e of engines) this.stats.peakReserved[e.id] = 0;
  }

  /** True for the policies that reserve KV and make rollouts wait (`kv-budget`, `kv-adaptive`). */
  private get budgeted(): boolean {
    return this.policy === 'kv-budget' || this.policy === 'kv-adaptive';
  }

  /** The engines' current load (copies). */
  snapshot(): EngineLoad[] {
    return this.engines.map((e) => ({ ...e }));
  }

  leaseOf(rolloutId: string): Lease | undefined {
    return this.leases.get(rolloutId);
  }

  /** Rollouts waiting for capacity, in queue order. */
  waiting(): string[] {
    return this.queue.map((q) => q.rolloutId);
  }

  /**
   * Reserve `tokens` (prompt + max response) for a rollout. Returns its lease (the existing one when it
   * has one: sticky), or null when it was queued. `front` queues it ahead of others (resumed rollouts).
   * `prompt` (tokens of the first request's input, default 0) is what `kv-adaptive` projects the rollout to
   * hold at its start; it may generate `tokens - prompt` more.
   * @throws ReservationTooLargeError under `kv-budget` / `kv-adaptive` when `tokens` exceeds every engine's capacity (it could never run).
   */
  acquire(rolloutId: string, tokens: number, front = false, prompt = 0): Lease | null {
    const existing = this.leases.get(rolloutId);
    if (existing) return existing;
    if (this.queue.some((q) => q.rolloutId === rolloutId)) return null;
    const largest = Math.max(...this.engines.map((e) => e.capacity));
    if (this.budgeted && tokens > largest) throw new ReservationTooLargeError(rolloutId, tokens, largest);
    // Waiters go first: a newcomer may not overtake the queue unless it is resumed work.
    const waiter = { rolloutId, tokens, prompt: Math.min(prompt, tokens) };
    const lease = front || this.queue.length === 0 ? this.grant(waiter) : null;
    if (lease) return lease;
    this.stats.queued++;
    if (front) this.queue.unshift(waiter);
    else this.queue.push(waiter);
    return null;
  }

  /**
   * Release a rollout's reservation (on every exit) or drop it from the queue; returns the waiters granted now.
   * `usage`, when known: the rollout's first prompt and the most KV tokens it held in one request (context +
   * generated). Its KV grew about linearly from the one to the other, so it held `(prompt + peak) / 2` on
   * reached of its reservation: `kv-adaptive` projects every rollout to run to its budget, so rollouts that
   * end early let it overcommit by as much ({@link admissionCeiling}).
   */
  release(rolloutId: string, usage?: { promptTokens: number; peakTokens: number }): Lease[] {
    const lease = this.leases.get(rolloutId);
    if (lease && usage && usage.peakTokens > 0 && lease.tokens > 0) {
      this.usedShares.push(Math.min(1, usage.peakTokens / lease.tokens));
      if (this.usedShares.length > USED_WINDOW) this.usedShares.shift();
    }
    this.leaseKv.delete(rolloutId);
    this.running.delete(rolloutId);
    if (lease) {
      this.leases.delete(rolloutId);
      this.turnedOver.add(lease.engineId);
      const e = this.engine(lease.engineId);
      e.reserved -= lease.tokens;
      e.leases--;
    } else {
      this.queue = this.queue.filter((q) => q.rolloutId !== rolloutId);
    }
    return this.drain();
  }

  /**
   * A generation request started / ended on an engine (the least-requests load signal). `req`, when the
   * caller knows it (`kv-adaptive` projects from it): the rollout, the request's input and generation cap
   * (tokens) and the time (ms, any monotonic clock the caller keeps using) it was sent.
   */
  requestStarted(engineId: string, req?: { rolloutId: string; inputTokens: number; maxNewTokens: number; at: number }): void {
    this.engine(engineId).outstanding++;
    if (!req) return;
    this.now = Math.max(this.now, req.at);
    this.running.set(req.rolloutId, { engineId, inputTokens: req.inputTokens, maxNewTokens: req.maxNewTokens, startedAt: req.at });
    const kv = this.leaseKv.get(req.rolloutId);
    if (kv) kv.context = Math.max(kv.context, req.inputTokens);
  }

  /**
   * `req`: the rollout, the tokens the request generated (0 when it failed) and the time (ms) it ended.
   * Returns the waiters granted now (under `kv-adaptive` the projection changed).
   */
  requestEnded(engineId: string, req?: { rolloutId: string; generatedTokens: number; at: number }): Lease[] {
    const e = this.engine(engineId);
    e.outstanding = Math.max(0, e.outstanding - 1);
    if (!req) return [];
    this.now = Math.max(this.now, req.at);
    const r = this.running.get(req.rolloutId);
    this.running.delete(req.rolloutId);
    const kv = this.leaseKv.get(req.rolloutId);
    if (r && kv) kv.context = Math.max(kv.context, r.inputTokens + req.generatedTokens);
    // A request that generated its tokens tells the engine's decode rate until its KV usage is observed.
    if (r && req.generatedTokens > 0 && req.at > r.startedAt && !this.stepRate.has(engineId)) this.stepRate.set(engineId, req.generatedTokens / (req.at - r.startedAt));
    return this.policy === 'kv-adaptive' ? this.drain() : [];
  }

  /**
   * What an engine reports about its KV cache now (`kvUsedTokens`, its monotonic `retractions` counter;
   * `kvCapacityTokens` when it says). Every policy counts the retractions in {@link SchedulerStats}; under
   * `kv-adaptive` the sample steps the engine's admission factor ({@link nextAdmission}; "saturated" = some
   * rollout is waiting, "turned over" = a lease on the engine was released since its factor last grew). Returns the waiters granted now (the budget may have grown).
   */
  observe(engineId: string, sample: { kvUsedTokens: number; retractions: number; kvCapacityTokens?: number | null }, at?: number): Lease[] {
    const e = this.engine(engineId);
    if (at !== undefined) {
      this.now = Math.max(this.now, at);
      const rate = stepRateFromUsage(this.requestsOn(engineId), sample.kvUsedTokens, this.now);
      if (rate !== null && rate > 0) this.stepRate.set(engineId, rate);
    }
    if (sample.kvCapacityTokens && sample.kvCapacityTokens > 0) e.capacity = sample.kvCapacityTokens;
    const before = this.admission.get(engineId) ?? INITIAL_ADMISSION;
    const { state, move } = nextAdmission(
      before,
      { usedShare: sample.kvUsedTokens / e.capacity, retractions: sample.retractions },
      { saturated: this.queue.length > 0, turnedOver: this.turnedOver.has(engineId), ceiling: admissionCeiling(this.usedShares, this.admissionSettings) },
      this.admissionSettings,
    );
    if (before.retractions !== null && sample.retractions > before.retractions) this.stats.retractions += sample.retractions - before.retractions;
    if (this.policy !== 'kv-adaptive') {
      this.admission.set(engineId, { ...state, factor: 1 });
      return [];
    }
    this.admission.set(engineId, state);
    if (move === 'backoff' || move === 'trim') this.stats.backoffs++;
    if (move === 'grow') this.turnedOver.delete(engineId);
    e.admitFactor = state.factor;
    // Time passed: the rollouts on the engine advanced and the projection fell (or the factor grew).
    return this.drain();
  }

  /**
   * Take an engine out of rotation: its leases are dropped and their rollouts re-queued at the head
   * (they resume elsewhere from their last completed turn). Returns the evicted rollout ids and the
   * grants made (to evicted rollouts or other waiters).
   */
  markDown(engineId: string): { evicted: string[]; grants: Lease[] } {
    const e = this.engine(engineId);
    if (!e.up) return { evicted: [], grants: [] };
    e.up = false;
    const evicted = [...this.leases.values()].filter((l) => l.engineId === engineId);
    for (const l of evicted) this.leases.delete(l.rolloutId);
    e.reserved = 0;
    e.leases = 0;
    e.outstanding = 0;
    this.stats.evicted += evicted.length;
    for (const l of evicted) this.running.delete(l.rolloutId);
    this.queue = [...evicted.map((l) => ({ rolloutId: l.rolloutId, tokens: l.tokens, prompt: this.leaseKv.get(l.rolloutId)?.context ?? 0 })), ...this.queue];
    for (const l of evicted) this.leaseKv.delete(l.rolloutId);
    return { evicted: evicted.map((l) => l.rolloutId), grants: this.drain() };
  }

  /** Put an engine back into rotation (health probe passed); returns the waiters granted now. */
  markUp(engineId: string, capacity?: number): Lease[] {
    const e = this.engine(engineId);
    e.up = true;
    if (capacity !== undefined && capacity > 0) e.capacity = capacity;
    return this.drain();
  }

  private engine(id: string): EngineLoad {
    const e = this.engines.find((x) => x.id === id);
    if (!e) throw new NoEngineError(`unknown engine ${id}`);
    return e;
  }

  private requestsOn(engineId: string): RunningRequest[] {
    return [...this.running.values()].filter((r) => r.engineId === engineId);
  }

  /**
   * The KV trajectories of an engine's rollouts now: one in flight holds its input plus what it has
   * generated at the engine's decode rate; one between turns (or granted, not started) holds its context.
   * Each may still grow to its reservation.
   */
  private trajectories(engineId: string): KvTrajectory[] {
    const rate = this.stepRate.get(engineId) ?? 0;
    const out: KvTrajectory[] = [];
    for (const l of this.leases.values()) {
      if (l.engineId !== engineId) continue;
      const r = this.running.get(l.rolloutId);
      const kv = r ? r.inputTokens + generatedBy(r, rate, this.now) : (this.leaseKv.get(l.rolloutId)?.context ?? l.tokens);
      const left = r ? r.maxNewTokens - generatedBy(r, rate, this.now) : 0;
      out.push({ kv, remaining: Math.max(left, l.tokens - kv, 0) });
    }
    return out;
  }

  /**
   * `kv-adaptive`: the live engine whose projected peak with the waiter added ({@link projectedPeak}, plus
   * one token per rollout for the step being decoded) fits in `admitFactor x capacity` and is the lowest
   * share of its capacity; null when none fits.
   */
  private pickProjected(w: Waiter): number | null {
    let best: { i: number; share: number; outstanding: number } | null = null;
    this.engines.forEach((e, i) => {
      if (!e.up) return;
      const t = this.trajectories(e.id);
      t.push({ kv: w.prompt, remaining: w.tokens - w.prompt });
      const need = projectedPeak(t) + t.length;
      if (need > (e.admitFactor ?? 1) * e.capacity) return;
      const share = need / e.capacity;
      if (!best || share < best.share || (share === best.share && e.outstanding < best.outstanding)) best = { i, share, outstanding: e.outstanding };
    });
    return (best as { i: number } | null)?.i ?? null;
  }

  private grant(w: Waiter): Lease | null {
    const { rolloutId, tokens } = w;
    let index: number | null;
    if (this.policy === 'kv-adaptive') {
      index = this.pickProjected(w);
    } else {
      const pick = pickEngine(this.policy, this.engines, tokens, this.cursor);
      this.cursor = pick.cursor;
      index = pick.index;
    }
    if (index === null) return null;
    const e = this.engines[index];
    if (this.policy === 'kv-adaptive') this.leaseKv.set(rolloutId, { prompt: w.prompt, context: w.prompt });
    e.reserved += tokens;
    e.leases++;
    if (e.reserved > e.capacity) this.stats.overflows++;
    this.stats.peakReserved[e.id] = Math.max(this.stats.peakReserved[e.id] ?? 0, e.reserved);
    const lease = { rolloutId, engineId: e.id, tokens };
    this.leases.set(rolloutId, lease);
    return lease;
  }

  private maxFree(): number {
    let m = -Infinity;
    for (const e of this.engines) if (e.up) m = Math.max(m, freeBudget(this.policy, e));
    return m;
  }

  private drain(): Lease[] {
    if (this.policy === 'kv-adaptive') return this.drainProjected();
    const grants: Lease[] = [];
    const rest: Waiter[] = [];
    // Under a budgeted policy a waiter larger than every engine's free budget cannot be granted: skip it cheaply.
    let free = this.budgeted ? this.maxFree() : Infinity;
    if (free !== Infinity) {
      let min = Infinity;
      for (const q of this.queue) min = Math.min(min, q.tokens);
      if (min > free) return grants;
    }
    for (const q of this.queue) {
      if (q.tokens > free) {
        rest.push(q);
        continue;
      }
      const lease = this.grant(q);
      if (lease && this.budgeted) free = this.maxFree();
      if (lease) grants.push(lease);
      else rest.push(q);
    }
    this.queue = rest;
    return grants;
  }

  /**
   * `kv-adaptive`'s queue, longest budget first (ties in arrival order), first-fit: a long rollout that
   * starts late runs on alone at the end of a batch while the engines idle, so it goes first and the short
   * ones fill the room around it (longest-processing-time-first, the classic makespan rule). A waiter that
   * fits nowhere makes every later waiter with as large a prompt and budget left fit nowhere too (the
   * projection only grows with either), so those are skipped without projecting: a long queue of alike
   * rollouts costs one projection per engine.
   */
  private drainProjected(): Lease[] {
    const grants: Lease[] = [];
    const rest: Waiter[] = [];
    const failed: { prompt: number; left: number }[] = [];
    const order = [...this.queue].sort((x, y) => y.tokens - y.prompt - (x.tokens - x.prompt));
    for (const q of order) {
      const left = q.tokens - q.prompt;
      if (failed.some((f) => q.prompt >= f.prompt && left >= f.left)) {
        rest.push(q);
        continue;
      }
      const lease = this.grant(q);
      if (lease) grants.push(lease);
      else {
        rest.push(q);
        failed.push({ prompt: q.prompt, left });
      }
    }
    this.queue = rest;
    return grants;
  }
}
