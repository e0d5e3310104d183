import { ContextExceededError, type EngineSession, type GenerateRequest, type GenerateResult } from '@rstar/agent';
import { RolloutScheduler, type Lease } from './scheduler/rollout.scheduler';
import type { SchedulingPolicy } from './scheduler/engine.picker';
import { EngineContextExceededError, EngineUnavailableError, NoEngineError } from './engine.errors';
import { forgetPoolMetrics, registerPoolMetrics } from './engine-pool.metrics';
import type { EngineAdapter, LoadedWeights } from './engine.port';
import { checkLoadedWeights, type PolicyWeights } from './weight-sync';
import { receiveDistributedWeights, type DistributedUpdate } from './distributed-receive';

/** Options of the pool. */
export interface EnginePoolOptions {
  /** How often engines that are down are probed to bring them back (ms; 0 = never). Default 2000. */
  probeIntervalMs?: number;
  /** How long a rollout may wait for a reservation before failing with NoEngineError (ms). Default 600000. */
  leaseTimeoutMs?: number;
  /**
   * How often every live engine's KV usage and retraction counter are read (`loadStats`, ms; 0 = never).
   * Default 250 under `kv-adaptive` (it admits by them), 0 otherwise.
   */
  loadProbeMs?: number;
  /** Called when an engine leaves or re-enters rotation. */
  onEngineState?: (engineId: string, up: boolean, reason: string) => void;
}

/** A rollout's handle: generates on its sticky engine and moves on failure; `release()` on every exit. */
export interface PooledSession extends EngineSession {
  readonly rolloutId: string;
  /** The engine of its current reservation, if any. */
  engineId(): string | undefined;
  release(): void;
}

/**
 * Engines plus the rollout scheduler (docs/design/protocol.md §7): a rollout reserves `prompt + max_response` KV tokens
 * on first use, keeps its engine for every turn, and releases on exit. An engine that does not answer
 * (after the adapter's retries) is taken out of rotation; its in-flight requests are aborted and its
 * rollouts re-queued first, so each resumes on another engine by resending its context up to the last
 * completed turn. Engines that are down are probed and re-admitted when healthy.
 */
export class EnginePool {
  private readonly byId = new Map<string, EngineAdapter>();
  private readonly waiters = new Map<string, { resolve: (l: Lease) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly inflight = new Map<string, Set<AbortController>>();
  private readonly probe: NodeJS.Timeout | null;
  private readonly loadProbe: NodeJS.Timeout | null;
  private observing = false;

  constructor(
    readonly adapters: readonly EngineAdapter[],
    readonly scheduler: RolloutScheduler,
    private readonly opts: EnginePoolOptions = {},
  ) {
    for (const a of adapters) {
      this.byId.set(a.id, a);
      this.inflight.set(a.id, new Set());
    }
    registerPoolMetrics(scheduler);
    const every = opts.probeIntervalMs ?? 2000;
    this.probe = every > 0 ? setInterval(() => void this.probeDown(), every) : null;
    this.probe?.unref();
    const loadEvery = opts.loadProbeMs ?? (scheduler.policy === 'kv-adaptive' ? 250 : 0);
    this.loadProbe = loadEvery > 0 ? setInterval(() => void this.observeLoads(), loadEvery) : null;
    this.loadProbe?.unref();
  }

  /**
   * Ask every engine for its KV capacity and build the pool. @throws EngineUnavailableError /
   * EngineResponseError from an engine's server info; NoEngineError for an empty list.
   */
  static async create(adapters: readonly EngineAdapter[], policy: SchedulingPolicy = 'kv-budget', opts: EnginePoolOptions = {}): Promise<EnginePool> {
    if (adapters.length === 0) throw new NoEngineError('no engines configured; pass at least one kind=url');
    const infos = await Promise.all(adapters.map((a) => a.serverInfo()));
    return new EnginePool(adapters, new RolloutScheduler(policy, adapters.map((a, i) => ({ id: a.id, capacity: infos[i].kvCapacityTokens }))), opts);
  }

  /**
   * A session for one rollout. Its first request fixes the reservation: `inputIds.length` (the prompt)
   * + `maxNewTokens` (the whole response budget), kept for every later turn and any move.
   */
  open(rolloutId: string): PooledSession {
    let moved = false;
    let reserveTokens = 0;
    let peakTokens = 0;
    let promptTokens = 0;
    return {
      rolloutId,
      engineId: () => this.scheduler.leaseOf(rolloutId)?.engineId,
      release: () => this.release(rolloutId, peakTokens > 0 ? { promptTokens, peakTokens } : undefined),
      generate: async (req: GenerateRequest): Promise<GenerateResult & { engineId: string }> => {
        if (reserveTokens === 0) {
          reserveTokens = req.inputIds.length + req.sampling.maxNewTokens;
          promptTokens = req.inputIds.length;
        }
        for (;;) {
          const lease = await this.lease(rolloutId, reserveTokens, moved, promptTokens);
          const adapter = this.byId.get(lease.engineId) as EngineAdapter;
          const ac = new AbortController();
          const set = this.inflight.get(lease.engineId) as Set<AbortController>;
          set.add(ac);
          this.scheduler.requestStarted(lease.engineId, { rolloutId, inputTokens: req.inputIds.length, maxNewTokens: req.sampling.maxNewTokens, at: performance.now() });
          let generated = 0;
          try {
            const res = await adapter.generate(req, ac.signal);
            generated = res.tokenIds.length;
            peakTokens = Math.max(peakTokens, req.inputIds.length + res.tokenIds.length);
            return { ...res, engineId: lease.engineId };
          } catch (e) {
            // Another engine has the same window (one model): no move, the agent loop ends the rollout truncated.
            if (e instanceof EngineContextExceededError) throw new ContextExceededError(e.message, lease.engineId);
            if (!(e instanceof EngineUnavailableError) && !ac.signal.aborted) throw e;
            this.markDown(lease.engineId, e instanceof Error ? e.message : String(e));
            moved = true;
          } finally {
            set.delete(ac);
            this.grant(this.scheduler.requestEnded(lease.engineId, { rolloutId, generatedTokens: generated, at: performance.now() }));
          }
        }
      },
    };
  }

  /**
   * Ask the engine that serves `rolloutId` to stop request `rid` now (partial rollouts, a weight update
   * pending): its abort answers the request with finish reason `abort` and the tokens generated so far.
   * Best effort: a request the engine does not know (not arrived yet, already done) is left alone.
   */
  async interrupt(rolloutId: string, rid: string): Promise<void> {
    const engineId = this.scheduler.leaseOf(rolloutId)?.engineId;
    const adapter = engineId === undefined ? undefined : this.byId.get(engineId);
    await adapter?.abort(rid).catch(() => undefined);
  }

  /** Take an engine out of rotation (see class doc). Idempotent. */
  markDown(engineId: string, reason: string): void {
    const wasUp = this.scheduler.snapshot().find((e) => e.id === engineId)?.up ?? false;
    const { grants } = this.scheduler.markDown(engineId);
    if (wasUp) this.opts.onEngineState?.(engineId, false, reason);
    for (const ac of this.inflight.get(engineId) ?? []) ac.abort(new EngineUnavailableError(engineId, reason));
    this.grant(grants);
  }

  /**
   * Load a checkpoint on every live engine and drop their prefix caches. Call it with no rollout in flight.
   * With `policy`, each engine is told the policy version and must then report holding it
   * ({@link checkLoadedWeights}: the load's answer and `loadedWeights()`). @throws WeightSyncError naming
   * the engine and both versions/hashes; the engine's own errors.
   */
  async updateWeights(path: string, policy?: PolicyWeights): Promise<void> {
    const live = this.scheduler.snapshot().filter((e) => e.up).map((e) => this.byId.get(e.id) as EngineAdapter);
    await Promise.all(live.map(async (a) => {
      const answer = await a.updateWeights(path, policy ? { version: policy.version } : undefined);
      await a.flushCache();
      if (!policy) return;
      const mismatch = checkLoadedWeights(a, policy, answer || null) ?? checkLoadedWeights(a, policy, a.loadedWeights ? await a.loadedWeights() : null);
      if (mismatch) throw mismatch;
    }));
  }

  /**
   * Receive policy `policy.version` over the run's weight-update group on every engine of the pool (a
   * distributed sync, docs/design/protocol.md §9): all of them, live or not, since the trainer's broadcast
   * waits for every rank. Call it with no rollout in flight, while the trainer broadcasts `update.buckets`.
   * @throws WeightSyncError when an engine then reports another version; EngineResponseError naming the engine.
   */
  async receiveWeights(update: DistributedUpdate, policy: PolicyWeights): Promise<void> {
    await receiveDistributedWeights(this.adapters, update, policy);
  }

  /**
   * Ask every live engine what it holds and compare with `policy` (before a step samples).
   * @throws WeightSyncError for the first engine that reports other weights.
   */
  async verifyWeights(policy: PolicyWeights): Promise<void> {
    const live = this.scheduler.snapshot().filter((e) => e.up).map((e) => this.byId.get(e.id) as EngineAdapter);
    const reports = await Promise.all(live.map(async (a): Promise<[EngineAdapter, LoadedWeights | null]> => [a, a.loadedWeights ? await a.loadedWeights() : null]));
    for (const [a, r] of reports) {
      const mismatch = checkLoadedWeights(a, policy, r);
      if (mismatch) throw mismatch;
    }
  }

  /**
   * Read every live engine's KV usage and retraction counter once and hand them to the scheduler
   * ({@link RolloutScheduler.observe}); rollouts it can now admit are granted. Engines that cannot tell
   * (no `loadStats`, or null) are skipped; a failed read is left to the health probe. Overlapping calls
   * are skipped.
   */
  async observeLoads(): Promise<void> {
    if (this.observing) return;
    this.observing = true;
    try {
      const live = this.scheduler.snapshot().filter((e) => e.up).map((e) => this.byId.get(e.id) as EngineAdapter);
      const samples = await Promise.all(live.map((a) => (a.loadStats ? a.loadStats().catch(() => null) : Promise.resolve(null))));
      live.forEach((a, i) => {
        const sample = samples[i];
        if (sample && this.scheduler.snapshot().find((e) => e.id === a.id)?.up) this.grant(this.scheduler.observe(a.id, sample, performance.now()));
      });
    } finally {
      this.observing = false;
    }
  }

  /** Stop probing and fail every waiter. */
  close(): void {
    if (this.probe) clearInterval(this.probe);
    if (this.loadProbe) clearInterval(this.loadProbe);
    forgetPoolMetrics(this.scheduler);
    for (const [r, w] of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new NoEngineError(`engine pool closed while rollout ${r} waited for an engine`));
    }
    this.waiters.clear();
  }

  private release(rolloutId: string, usage?: { promptTokens: number; peakTokens: number }): void {
    const w = this.waiters.get(rolloutId);
    if (w) {
      clearTimeout(w.timer);
      this.waiters.delete(rolloutId);
    }
    this.grant(this.scheduler.release(rolloutId, usage));
  }

  private lease(rolloutId: string, tokens: number, front: boolean, prompt: number): Promise<Lease> {
    const l = this.scheduler.leaseOf(rolloutId) ?? this.scheduler.acquire(rolloutId, tokens, front, prompt);
    if (l) return Promise.resolve(l);
    return new Promise<Lease>((resolve, reject) => {
      const ms = this.opts.leaseTimeoutMs ?? 600_000;
      const timer = setTimeout(() => {
        this.waiters.delete(rolloutId);
        this.scheduler.release(rolloutId);
        reject(new NoEngineError(`rollout ${rolloutId} waited ${ms} ms for ${tokens} KV tokens on a live engine`));
      }, ms);
      this.waiters.set(rolloutId, { resolve, reject, timer });
    });
  }

  private grant(grants: readonly Lease[]): void {
    for (const g of grants) {
      const w = this.waiters.get(g.rolloutId);
      if (!w) continue; // an evicted rollout waiting for its tool keeps the lease for its next turn
      clearTimeout(w.timer);
      this.waiters.delete(g.rolloutId);
      w.resolve(g);
    }
  }

  private async probeDown(): Promise<void> {
    for (const e of this.scheduler.snapshot().filter((x) => !x.up)) {
      const a = this.byId.get(e.id) as EngineAdapter;
      try {
        if (!(await a.health())) continue;
        const info = await a.serverInfo();
        this.opts.onEngineState?.(e.id, true, 'health probe passed');
        this.grant(this.scheduler.markUp(e.id, info.kvCapacityTokens));
      } catch {
        // still down: probe again next interval
      }
    }
  }
}
