import { InvalidRolloutRequestError, runRollout, type RolloutOptions, type RolloutResult, type Tokenizer, type TurnRecord } from '@rstar/agent';
import { makeEvent, RstarError, streams, type RstarEvent } from '@rstar/contracts';
import { PermanentError, TransientError, withHeartbeat, type EventBus, type Subscription } from '@rstar/messaging';
import { counter, createLogger, histogram, inSpan, type Logger } from '@rstar/telemetry';
import { BusToolExecutor } from './bus-tool.executor';
import { EngineError, EngineResponseError, ReservationTooLargeError, WeightSyncError, checkLoadedWeights, type EnginePool } from '@rstar/engines';
import { PolicyFollower, PolicyFollowerClosedError } from './policy.follower';
import { PolicyRunChangedError, PolicyVersionGate, type PolicyRef } from './policy-version.gate';
import { TurnJournal } from './turn.journal';
import { tracedSession } from './engine-session.tracing';
import { PartialRolloutSession } from './partial-rollout.session';

/** Options of {@link PolicyServingHandler}. */
export interface PolicyServingOptions {
  /** The engines and scheduler of rollouts whose request names none (and of every rollout without {@link runPools}). */
  pool: EnginePool;
  /**
   * The pools of runs that name their own engines and scheduler (`RolloutRequested.engines` / `scheduler`,
   * from the run config). Absent: every rollout runs on {@link pool}.
   */
  runPools?: RunPoolFactory;
  tokenizer: Tokenizer;
  /** Agent-loop options (tool limits, response truncation, parallel calls). */
  rollout?: RolloutOptions;
  /** Render prompts without the system turn (the tiny built-in policy). Default false; a request's `prompt` wins. */
  compactPrompt?: boolean;
  /**
   * The tokenizer hash of {@link tokenizer} (a model's own tokenizer: `ModelTokenizer.hash`): a rollout whose
   * request carries another `tokenizerHash` fails its run. Absent: not checked.
   */
  tokenizerHash?: string;
  /** Rollouts handled at once (the scheduler decides how many generate). Default 256. */
  concurrency?: number;
  /** Wait for a `ToolCallCompleted` (ms). Default 120000. */
  toolResultTimeoutMs?: number;
  /** Wait for the policy version a rollout asks for (ms) before retrying it later. Default 60000. */
  versionWaitMs?: number;
  /** Policy version the engines hold at start. Default 0. */
  initialPolicyVersion?: number;
  /**
   * This instance's stable identity (env `RSTAR_INSTANCE_ID`), default `default`. It names the
   * per-instance durables (`policy-serving-tool-results-<id>`, `policy-serving-turns-<id>`,
   * `policy-serving-policy-<id>`), so a
   * restarted instance resumes them and gets back what the dead one held unacked. Give every replica
   * its own id that survives restarts (e.g. the StatefulSet pod name); replicas sharing an id would
   * split the tool results between them.
   */
  instanceId?: string;
  /**
   * Ack deadline of the consumers in ms (default 30000): how soon a restarted instance gets the rollouts,
   * turns, tool results and policy update the dead one held. Live handlers heartbeat every third of it.
   * A redelivered rollout is redone no sooner than this long (+1 s) after start, once the turns the dead
   * process held are back in the journal.
   */
  ackWaitMs?: number;
  /** Durable consumer names (override the instance-derived ones); all but `rollouts` must be per instance. */
  durable?: { rollouts?: string; toolResults?: string; turns?: string; policy?: string };
  producer?: string;
  logger?: Logger;
}

type Requested = RstarEvent<'RolloutRequested'>;

/**
 * How policy-serving builds the engine pool a run's config names (see {@link PolicyServingOptions.runPools}).
 * Requests with the same key share one pool; the default pool's key is `keyOf(undefined, undefined)`.
 */
export interface RunPoolFactory {
  keyOf(engines: Requested['data']['engines'], scheduler: Requested['data']['scheduler']): string;
  /** @throws a typed error naming the field (e.g. `engines.1.url`) when the request's engines cannot be resolved. */
  create(engines: Requested['data']['engines'], scheduler: Requested['data']['scheduler']): Promise<EnginePool>;
}

const rolloutsCompleted = () => counter('rstar_rollouts_completed_total', 'Rollouts completed by this policy-serving, per run and finish reason', ['run', 'finish_reason']);
const rolloutToolCalls = () => counter('rstar_rollout_tool_calls_total', 'Tool calls of completed rollouts, per run and outcome (ok or error)', ['run', 'outcome']);
const responseTokens = () =>
  histogram('rstar_rollout_response_tokens', 'Response length of completed rollouts in tokens (model and tool-response tokens)', ['run'], [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]);

/** The weights check of an update that names its checkpoint hash. */
function weightsOf(ref?: PolicyRef & { checkpointHash?: string }): { version: number; checkpointHash: string } | undefined {
  return ref && ref.checkpointHash ? { version: ref.version, checkpointHash: ref.checkpointHash } : undefined;
}

/** How a rollout run in this process ended: its completion stored (and acked), dropped for good, or to be retried. */
type RunOutcome = 'completed' | 'dropped' | 'retry';

/**
 * How long a completed rollout's turns and tool results stay held after its `RolloutRequested` handler
 * returned: the bus sends the ack then, without waiting for the server; a crash before the ack went out
 * redelivers the request, and the redo must still find the rollout's turns and results (ms).
 */
const ACK_FLUSH_GRACE_MS = 1_000;

/**
 * policy-serving's flow (docs/design/architecture.md §5): consumes `RolloutRequested`, runs the multi-turn agent loop on
 * the engine pool (KV-budget scheduling, sticky engines, failover), emits `TurnGenerated` per turn and
 * `ToolCallRequested` per call the moment it is parsed, consumes `ToolCallCompleted`, and emits
 * `RolloutCompleted`. `PolicyUpdated` reloads every engine's weights between rollouts; a rollout whose request
 * says `partialRollouts` does not hold it back: its turn in flight is interrupted and continued under the new
 * weights ({@link PartialRolloutSession}, docs/design/protocol.md §8).
 *
 * Crash recovery (SIGKILL mid-run): nothing a rollout needs is acked before its
 * `RolloutCompleted` is stored. Its `RolloutRequested` is acked after the completion (heartbeating while
 * it runs); the `TurnGenerated` and `ToolCallCompleted` of a rollout running here stay unacked on this
 * instance's durables until then; the newest `PolicyUpdated` stays unacked until superseded
 * ({@link PolicyFollower}). A restarted instance with the same {@link PolicyServingOptions.instanceId}
 * gets all of them back after `ackWaitMs`, reloads the weights, and redoes each interrupted rollout as a
 * continuation: recorded turns are taken from the {@link TurnJournal} instead of being sampled again (so
 * the redo cannot contradict the archived turns), their tool calls keep their ids
 * (`call:<rolloutId>:<turn>:<i>`) and take the redelivered results instead of waiting for calls the bus
 * deduplicated, and only the missing turns are generated. Every event id derives from the rollout, so
 * anything re-published is dropped as a duplicate (JetStream msg-id window, the archive's `ON CONFLICT`).
 * A rollout whose context outgrows the engine's window ends truncated (`context_exceeded`) and still completes.
 */
export class PolicyServingHandler {
  private readonly log: Logger;
  private readonly producer: string;
  private readonly tools: BusToolExecutor;
  private readonly gate: PolicyVersionGate;
  private readonly follower: PolicyFollower;
  private readonly journal = new TurnJournal();
  /** Redelivered rollouts wait until then: the dead process's held turns are redelivered by then. */
  private journalReadyAt = 0;
  /** Rollouts running here: the run, and when its held turns/results may be acked (see ACK_FLUSH_GRACE_MS). */
  private readonly running = new Map<string, { result: Promise<void>; outcome: Promise<RunOutcome>; acked: () => void }>();
  private readonly done = new Set<string>();
  /** Runs this instance failed (weight sync or tokenizer mismatch): their rollouts are dropped. */
  private readonly failedRuns = new Set<string>();
  /** Checkpoint hash of each loaded policy (`runId@version`), and the policies verified before sampling. */
  private readonly policyHashes = new Map<string, string>();
  private readonly verified = new Map<string, Promise<void>>();
  private subs: Subscription[] = [];
  /** The pool rollouts run on now (one run at a time holds the engines), and every pool built, by key. */
  private current: EnginePool;
  private readonly pools = new Map<string, EnginePool>();
  /** Pool switches, one at a time. */
  private switching: Promise<unknown> = Promise.resolve();
  /** The newest policy the follower loaded (or is loading): a pool switched to within its run loads it too. */
  private lastLoad: { uri: string; ref?: PolicyRef & { checkpointHash?: string } } | null = null;
  private stopping: Promise<'stopping'> = new Promise(() => undefined);
  private markStopping: () => void = () => undefined;

  constructor(
    private readonly bus: EventBus,
    private readonly opts: PolicyServingOptions,
  ) {
    this.producer = opts.producer ?? 'policy-serving';
    this.log = opts.logger ?? createLogger('policy-serving');
    this.tools = new BusToolExecutor(bus, { runId: '', producer: this.producer, causedBy: null }, { resultTimeoutMs: opts.toolResultTimeoutMs ?? 120_000 });
    this.gate = new PolicyVersionGate(opts.initialPolicyVersion ?? 0);
    this.current = opts.pool;
    if (opts.runPools) this.pools.set(opts.runPools.keyOf(undefined, undefined), opts.pool);
    this.follower = new PolicyFollower(this.gate, async (uri, ref) => {
      this.lastLoad = { uri, ref };
      // A distributed sync: the engines receive the trainer's broadcast (once: the trainer sends it once).
      let pool = this.current;
      if (ref?.sync) await pool.receiveWeights(ref.sync, { version: ref.version, checkpointHash: null });
      else await pool.updateWeights(uri, weightsOf(ref));
      // A switch to another pool during the load: that pool must get these weights too (from the checkpoint).
      while (pool !== this.current) {
        pool = this.current;
        await pool.updateWeights(uri, weightsOf(ref));
      }
    });
  }

  /**
   * The pool a rollout runs on: the one its run's config names (built once per engine set and scheduler),
   * made current. A pool switched to within a run whose policy the follower already loaded loads it first
   * (the engines of a fresh run got their start weights from the optimization service).
   */
  private poolFor(ev: Requested): Promise<EnginePool> {
    const f = this.opts.runPools;
    if (!f) return Promise.resolve(this.opts.pool);
    const key = f.keyOf(ev.data.engines, ev.data.scheduler);
    if (this.pools.get(key) === this.current) return Promise.resolve(this.current);
    const next = this.switching.then(async () => {
      let pool = this.pools.get(key);
      if (!pool) {
        pool = await f.create(ev.data.engines, ev.data.scheduler);
        this.pools.set(key, pool);
        this.log.info('engine pool of a run config', { runId: ev.runId, engines: pool.adapters.map((a) => a.id), scheduler: pool.scheduler.policy });
      }
      if (pool !== this.current) {
        this.current = pool;
        const last = this.lastLoad;
        if (last && last.ref?.runId === ev.runId) await pool.updateWeights(last.uri, weightsOf(last.ref));
      }
      return pool;
    });
    this.switching = next.catch(() => undefined);
    return next;
  }

  /** The engine pool rollouts run on now: the last run's (its config's engines and scheduler), else the default. */
  get enginePool(): EnginePool {
    return this.current;
  }

  /** Rollouts being run by this instance now. */
  get activeRollouts(): number {
    return this.running.size;
  }

  /** The policy version the engines hold now (of the run in {@link policy}). */
  get policyVersion(): number {
    return this.gate.loadedVersion;
  }

  /** The policy the engines hold now: run, version, and when its `PolicyUpdated` was recorded. */
  get policy(): PolicyRef {
    return this.gate.loaded;
  }

  /** The durable consumer names this instance uses (see {@link PolicyServingOptions.instanceId}). */
  get durables(): { rollouts: string; toolResults: string; turns: string; policy: string } {
    const d = this.opts.durable ?? {};
    const id = this.opts.instanceId ?? 'default';
    return {
      rollouts: d.rollouts ?? 'policy-serving-rollouts',
      toolResults: d.toolResults ?? `policy-serving-tool-results-${id}`,
      turns: d.turns ?? (d.toolResults ? `${d.toolResults}-turns` : `policy-serving-turns-${id}`),
      policy: d.policy ?? `policy-serving-policy-${id}`,
    };
  }

  async start(): Promise<void> {
    const d = this.durables;
    const ackWaitMs = this.opts.ackWaitMs ?? 30_000;
    this.stopping = new Promise((resolve) => (this.markStopping = () => resolve('stopping')));
    const concurrency = this.opts.concurrency ?? 256;
    this.journalReadyAt = Date.now() + ackWaitMs + 1_000;
    // Tool results and turns first, so nothing of a rollout we start is missed. Both are held until their
    // rollout completes: room for every turn and call of every rollout in flight.
    this.subs.push(
      await this.bus.subscribe({
        durable: d.toolResults,
        types: ['ToolCallCompleted'],
        concurrency: Math.max(1024, concurrency * 16),
        ackWaitMs,
        handler: async (ev, ctx) => withHeartbeat(ctx, ackWaitMs, () => this.onToolResult(ev)),
      }),
    );
    this.subs.push(
      await this.bus.subscribe({
        durable: d.turns,
        types: ['TurnGenerated'],
        concurrency: Math.max(1024, concurrency * 16),
        ackWaitMs,
        handler: async (ev, ctx) => withHeartbeat(ctx, ackWaitMs, () => this.onTurnRecorded(ev)),
      }),
    );
    this.subs.push(
      await this.bus.subscribe({
        durable: d.policy,
        types: ['PolicyUpdated'],
        // The newest update is held (see PolicyFollower): newer ones must still come through.
        concurrency: 16,
        ackWaitMs,
        handler: async (ev, ctx) => withHeartbeat(ctx, ackWaitMs, () => this.onPolicyUpdated(ev)),
      }),
    );
    this.subs.push(
      await this.bus.subscribe({
        durable: d.rollouts,
        types: ['RolloutRequested'],
        concurrency,
        ackWaitMs,
        handler: async (ev, ctx) => withHeartbeat(ctx, ackWaitMs, () => this.onRequested(ev, ctx.deliveryCount)),
      }),
    );
  }

  /**
   * Stop: held tool results and policy updates are released unacked (redelivered to the next start),
   * waiting tool calls fail (their rollouts are retried), then the consumers drain.
   */
  async stop(): Promise<void> {
    const subs = this.subs;
    this.subs = [];
    this.markStopping();
    this.follower.close('policy-serving stopping');
    this.tools.failAll(new TransientError('policy-serving stopping'));
    await Promise.allSettled(subs.map((s) => s.drain()));
    this.opts.pool.close();
    for (const p of this.pools.values()) if (p !== this.opts.pool) p.close();
  }

  private async onPolicyUpdated(ev: RstarEvent<'PolicyUpdated'>): Promise<void> {
    const { version, checkpointUri, checkpointHash, sync } = ev.data;
    const ref = { runId: ev.runId, version, at: Date.parse(ev.meta.recordedAt), checkpointHash, ...(sync ? { sync: { groupName: sync.groupName, buckets: sync.buckets } } : {}) };
    this.policyHashes.set(`${ev.runId}@${version}`, checkpointHash);
    if (this.failedRuns.has(ev.runId)) return;
    try {
      const applied = await this.follower.apply(ref, checkpointUri);
      this.log.info(applied ? 'weights reloaded' : 'policy update skipped (not newer)', { runId: ev.runId, version, uri: checkpointUri });
      await this.follower.superseded(ref);
    } catch (e) {
      if (e instanceof PolicyFollowerClosedError) throw new TransientError(`PolicyUpdated ${ev.runId}@${version} released unacked: ${e.message}`, e);
      if (e instanceof WeightSyncError) {
        await this.failRun(ev, null, `weight sync failed after loading policy version ${version} from ${sync ? `the trainer over group ${sync.groupName}` : checkpointUri}: ${e.message}`);
        throw new PermanentError(e.message, 'checkpointHash');
      }
      if (sync && e instanceof EngineError) {
        // The trainer broadcasts each version once: a receive that failed cannot be retried.
        await this.failRun(ev, null, `engines could not receive policy version ${version} over group ${sync.groupName}: ${e.message}`);
        throw new PermanentError(e.message, 'sync');
      }
      throw new TransientError(`loading policy ${ev.runId}@${version} from ${checkpointUri} failed: ${(e as Error).message}`, e);
    }
  }

  /**
   * Fail a run loudly: `RunFailed` (deterministic id per run, so several instances or rollouts record it
   * once) naming what went wrong; later rollouts of the run are dropped here.
   */
  private async failRun(cause: RstarEvent, step: number | null, error: string): Promise<void> {
    this.failedRuns.add(cause.runId);
    this.log.error('run failed', { runId: cause.runId, step, error });
    await this.bus.publish(makeEvent('RunFailed', {
      runId: cause.runId, streamId: streams.run(cause.runId), key: cause.runId, producer: this.producer, causedBy: cause, data: { error, step },
    }));
  }

  /**
   * Before a run's rollouts sample with policy `version`: every engine must report holding it (its weight
   * version, and the checkpoint manifest hash when known), once per run and version.
   */
  private verifyBeforeSampling(pool: EnginePool, runId: string, version: number): Promise<void> {
    // Per pool: engines switched to mid-run are verified again.
    const policy = `${runId}@${version}`;
    const key = `${policy}@${[...this.pools.values()].indexOf(pool)}`;
    let p = this.verified.get(key);
    if (!p) {
      p = pool.verifyWeights({ version, checkpointHash: this.policyHashes.get(policy) ?? null });
      this.verified.set(key, p);
      p.catch(() => this.verified.delete(key));
      if (this.verified.size > 1000) this.verified.delete(this.verified.keys().next().value as string);
    }
    return p;
  }

  /**
   * Route a tool result to its call; while its rollout runs here, keep the message unacked until the
   * rollout's completion is stored (a crash before that redelivers it to the redo), and nak it when the
   * rollout is to be retried (the retry re-requests the call, which the bus deduplicates).
   */
  private async onToolResult(ev: RstarEvent<'ToolCallCompleted'>): Promise<void> {
    this.tools.complete(ev);
    await this.holdWhileRunning(ev.data.rolloutId, `tool result ${ev.data.callId}`);
  }

  /** Journal a published turn (ours or another instance's) and hold it like a tool result. */
  private async onTurnRecorded(ev: RstarEvent<'TurnGenerated'>): Promise<void> {
    const { rolloutId, ...turn } = ev.data;
    if (!this.done.has(rolloutId)) this.journal.record(rolloutId, turn);
    await this.holdWhileRunning(rolloutId, `turn ${ev.id}`);
  }

  /**
   * While `rolloutId` runs here, keep the message unacked until its completion is stored and its request
   * acked (a crash before that redelivers it to the redo), and nak it when the rollout is to be retried. Not running here:
   * another instance's rollout, or one to be redone here later (kept by the executor and the journal): ack.
   */
  private async holdWhileRunning(rolloutId: string, what: string): Promise<void> {
    const run = this.running.get(rolloutId);
    if (!run) return;
    const outcome = await Promise.race([run.outcome, this.stopping]);
    if (outcome === 'retry' || outcome === 'stopping') {
      throw new TransientError(`${what} released unacked: rollout ${rolloutId} ${outcome === 'retry' ? 'will be retried' : 'interrupted by shutdown'}`);
    }
  }

  private async onRequested(ev: Requested, deliveryCount: number): Promise<void> {
    const id = ev.data.rolloutId;
    if (this.done.has(id) || this.failedRuns.has(ev.runId)) return;
    // A redelivery may be the redo of a rollout a dead process had started: wait until the turns it held
    // are back in the journal, or the redo would sample turns that were already published.
    if (deliveryCount > 1 && !this.running.has(id)) {
      const wait = this.journalReadyAt - Date.now();
      let timer: NodeJS.Timeout | undefined;
      const ready = new Promise<'ready'>((r) => (timer = setTimeout(() => r('ready'), Math.max(0, wait))));
      const first = await Promise.race([ready, this.stopping]);
      clearTimeout(timer);
      if (first === 'stopping') throw new TransientError(`rollout ${id} released unacked: policy-serving stopping`);
      // Another delivery of it may have run it to completion meanwhile.
      if (this.done.has(id)) return;
    }
    let run = this.running.get(id);
    if (!run) {
      const result = this.runOne(ev);
      const outcome = result.then(
        (): RunOutcome => 'completed',
        (e: unknown): RunOutcome => (e instanceof PermanentError ? 'dropped' : 'retry'),
      );
      let acked!: () => void;
      const settled = new Promise<RunOutcome>((resolve) => {
        acked = () => setTimeout(() => resolve('completed'), ACK_FLUSH_GRACE_MS);
        void outcome.then((o) => o !== 'completed' && resolve(o));
      });
      run = { result, outcome: settled, acked };
      this.running.set(id, run);
      void settled.then(() => this.running.delete(id));
    }
    await run.result;
    this.done.add(id);
    if (this.done.size > 100_000) this.done.delete(this.done.values().next().value as string);
    run.acked();
  }

  private async runOne(ev: Requested): Promise<void> {
    const r = ev.data;
    if (r.tokenizerHash && this.opts.tokenizerHash && r.tokenizerHash !== this.opts.tokenizerHash) {
      const msg = `tokenizer mismatch: run ${ev.runId} was started with tokenizer hash ${r.tokenizerHash}, policy-serving serves ${this.opts.tokenizerHash}; point RSTAR_TOKENIZER_DIR at the model the engines and the trainer serve`;
      await this.failRun(ev, r.step, msg);
      throw new PermanentError(msg, 'tokenizerHash');
    }
    let pool: EnginePool;
    try {
      pool = await this.poolFor(ev);
    } catch (e) {
      // The run's engines cannot be resolved (a URL neither the config nor RSTAR_ENGINES gives): no retry helps.
      if (e instanceof RstarError && !(e instanceof EngineError)) {
        await this.failRun(ev, r.step, `run ${ev.runId}'s engines: ${e.message}`);
        throw new PermanentError(e.message, e.field ?? 'engines');
      }
      throw new TransientError(`rollout ${r.rolloutId}: the engines of run ${ev.runId} did not answer: ${(e as Error).message}`, e);
    }
    const partial = r.partialRollouts === true;
    const version = await this.gate.enter(ev.runId, r.policyVersion, this.opts.versionWaitMs ?? 60_000, partial);
    if (version === null) {
      const held = this.gate.loaded;
      throw new TransientError(`rollout ${r.rolloutId} asks for policy version ${r.policyVersion} of run ${ev.runId}; engines hold ${held.runId ?? '(start)'}@${held.version} (no such PolicyUpdated seen by durable ${this.durables.policy})`);
    }
    const session = pool.open(r.rolloutId);
    // Partial rollouts: a weight update interrupts a turn in flight, which continues under the new weights.
    const engine = partial ? new PartialRolloutSession(session, this.gate, ev.runId, (rid) => pool.interrupt(r.rolloutId, rid)) : session;
    const kinds = new Map(pool.adapters.map((a) => [a.id, a.kind]));
    let result: RolloutResult;
    try {
      await this.verifyBeforeSampling(pool, ev.runId, version);
      const stream = streams.rollout(r.rolloutId);
      const attributes = { 'rstar.run.id': ev.runId, 'rstar.rollout.id': r.rolloutId, 'rstar.group.id': r.groupId, 'rstar.step': r.step, 'rstar.policy.version': version };
      result = await inSpan('rollout', { attributes }, async (span) => {
        const res = await runRollout(
        { rolloutId: r.rolloutId, problem: r.problem, sampling: r.samplingParams, budget: r.budget, tool: r.tool, compactPrompt: r.prompt?.compact ?? this.opts.compactPrompt },
        {
          engine: tracedSession(engine, r.rolloutId),
          tools: this.tools.forRollout(ev.runId, ev),
          tokenizer: this.opts.tokenizer,
          recorded: (turn) => this.journal.get(r.rolloutId, turn),
          onTurn: async (t: TurnRecord) => {
            // The engine says which weights sampled the turn: they must be the policy version this rollout runs on
            // (partial rollouts: the version each stretch of the turn was sampled under).
            const spans = t.segments ?? [{ fromToken: 0, policyVersion: version, ...(t.weightVersion === undefined ? {} : { weightVersion: t.weightVersion }) }];
            for (const sp of spans) {
              const mismatch = checkLoadedWeights(
                { id: t.engineId, kind: kinds.get(t.engineId) ?? 'unknown' },
                { version: sp.policyVersion, checkpointHash: null },
                sp.weightVersion === undefined ? null : { weightVersion: sp.weightVersion, manifestHash: null },
              );
              if (mismatch) throw mismatch;
            }
            await this.bus.publish(
              makeEvent('TurnGenerated', {
                runId: ev.runId, streamId: stream, key: `${r.rolloutId}:${t.turn}`, producer: this.producer, causedBy: ev,
                data: {
                  rolloutId: r.rolloutId, turn: t.turn, tokenIds: t.tokenIds, logprobs: t.logprobs, text: t.text, finishReason: t.finishReason, engineId: t.engineId,
                  policyVersion: spans[0].policyVersion, ...(t.weightVersion === undefined ? {} : { weightVersion: t.weightVersion }),
                  ...(spans.length > 1 ? { segments: spans } : {}),
                },
              }),
            );
            // Published: a retry in this process continues from it even before the bus delivers it back.
            this.journal.record(r.rolloutId, t);
          },
        },
        this.opts.rollout,
        );
        span.setAttributes({
          'rstar.rollout.turns': res.turns, 'rstar.rollout.tool_calls': res.toolCalls, 'rstar.rollout.tool_errors': res.toolErrors,
          'rstar.rollout.response_tokens': res.responseTokenIds.length, 'rstar.rollout.finish_reason': res.finishReason, 'rstar.engine.id': res.engineId,
        });
        return res;
      });
    } catch (e) {
      if (e instanceof WeightSyncError) {
        await this.failRun(ev, r.step, `step ${r.step} of run ${ev.runId} cannot sample with policy version ${version}: ${e.message}`);
        throw new PermanentError(e.message, 'policyVersion');
      }
      if (e instanceof InvalidRolloutRequestError) throw new PermanentError(e.message, e.field);
      if (e instanceof ReservationTooLargeError) throw new PermanentError(e.message, 'budget.maxTokens');
      // A 4xx from the engine will not pass on retry (context overflows never get here: they end the rollout truncated).
      if (e instanceof EngineResponseError) throw new PermanentError(e.message, 'problem');
      if (e instanceof EngineError || e instanceof PolicyRunChangedError) throw new TransientError(e.message, e);
      throw e;
    } finally {
      session.release();
      this.gate.leave(partial);
    }
    await this.bus.publish(
      makeEvent('RolloutCompleted', {
        runId: ev.runId, streamId: streams.rollout(r.rolloutId), key: r.rolloutId, producer: this.producer, causedBy: ev,
        data: {
          rolloutId: r.rolloutId, groupId: r.groupId, step: r.step, promptId: r.promptId, gold: r.gold, problem: r.problem,
          engineId: result.engineId, policyVersion: version,
          promptTokenIds: result.promptTokenIds, responseTokenIds: result.responseTokenIds, logprobs: result.logprobs, lossMask: result.lossMask,
          responseText: result.responseText, turns: result.turns, toolCalls: result.toolCalls, toolErrors: result.toolErrors,
          answerBlocks: result.answerBlocks, formatViolations: result.formatViolations, truncated: result.truncated, finishReason: result.finishReason,
        },
      }),
    );
    this.journal.forget(r.rolloutId);
    rolloutsCompleted().inc({ run: ev.runId, finish_reason: result.finishReason });
    rolloutToolCalls().inc({ run: ev.runId, outcome: 'ok' }, result.toolCalls - result.toolErrors);
    rolloutToolCalls().inc({ run: ev.runId, outcome: 'error' }, result.toolErrors);
    responseTokens().observe({ run: ev.runId }, result.responseTokenIds.length);
    this.log.debug('rollout completed', { rolloutId: r.rolloutId, turns: result.turns, engineId: result.engineId, finishReason: result.finishReason, ms: result.wallMs });
  }
}
