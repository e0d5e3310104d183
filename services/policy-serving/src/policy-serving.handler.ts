import { InvalidRolloutRequestError, runRollout, type RolloutOptions, type RolloutResult, type Tokenizer } from '@rstar/agent';
import { makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { PermanentError, TransientError, type EventBus, type Subscription } from '@rstar/messaging';
import { createLogger, type Logger } from '@rstar/telemetry';
import { BusToolExecutor } from './bus-tool.executor';
import { EngineError, EngineResponseError, ReservationTooLargeError } from './engine/engine.errors';
import type { EnginePool } from './engine/engine.pool';
import { PolicyVersionGate } from './policy-version.gate';

/** Options of {@link PolicyServingHandler}. */
export interface PolicyServingOptions {
  pool: EnginePool;
  tokenizer: Tokenizer;
  /** Agent-loop options (tool limits, response truncation, parallel calls). */
  rollout?: RolloutOptions;
  /** Render prompts without the system turn (the tiny built-in policy). Default false. */
  compactPrompt?: boolean;
  /** Rollouts handled at once (the scheduler decides how many generate). Default 256. */
  concurrency?: number;
  /** Wait for a `ToolCallCompleted` (ms). Default 120000. */
  toolResultTimeoutMs?: number;
  /** Wait for the policy version a rollout asks for (ms) before retrying it later. Default 60000. */
  versionWaitMs?: number;
  /** Policy version the engines hold at start. Default 0. */
  initialPolicyVersion?: number;
  /** Durable consumer names; the tool-result consumer must be per instance (each sees every completion). */
  durable?: { rollouts?: string; toolResults?: string; policy?: string };
  producer?: string;
  logger?: Logger;
}

type Requested = RstarEvent<'RolloutRequested'>;

/**
 * policy-serving's flow (ARCHITECTURE §5): consumes `RolloutRequested`, runs the multi-turn agent loop on
 * the engine pool (KV-budget scheduling, sticky engines, failover), emits `TurnGenerated` per turn and
 * `ToolCallRequested` per call the moment it is parsed, consumes `ToolCallCompleted`, and emits
 * `RolloutCompleted`. `PolicyUpdated` reloads every engine's weights between rollouts. Idempotent:
 * a redelivered request joins the running rollout or, once done, is acked; every event id is derived
 * from the rollout. A rollout's message is acked only after its `RolloutCompleted` is stored.
 */
export class PolicyServingHandler {
  private readonly log: Logger;
  private readonly producer: string;
  private readonly tools: BusToolExecutor;
  private readonly gate: PolicyVersionGate;
  private readonly running = new Map<string, Promise<void>>();
  private readonly done = new Set<string>();
  private subs: Subscription[] = [];

  constructor(
    private readonly bus: EventBus,
    private readonly opts: PolicyServingOptions,
  ) {
    this.producer = opts.producer ?? 'policy-serving';
    this.log = opts.logger ?? createLogger('policy-serving');
    this.tools = new BusToolExecutor(bus, { runId: '', producer: this.producer, causedBy: null }, { resultTimeoutMs: opts.toolResultTimeoutMs ?? 120_000 });
    this.gate = new PolicyVersionGate(opts.initialPolicyVersion ?? 0);
  }

  /** The policy version the engines hold now. */
  get policyVersion(): number {
    return this.gate.loadedVersion;
  }

  async start(): Promise<void> {
    const d = this.opts.durable ?? {};
    // Tool results first, so no completion of a rollout we start is missed.
    this.subs.push(
      await this.bus.subscribe({
        durable: d.toolResults ?? `policy-serving-tool-results-${process.pid}`,
        types: ['ToolCallCompleted'],
        concurrency: 64,
        handler: async (ev) => this.tools.complete(ev),
      }),
    );
    this.subs.push(
      await this.bus.subscribe({
        durable: d.policy ?? 'policy-serving-policy',
        types: ['PolicyUpdated'],
        concurrency: 1,
        ackWaitMs: 600_000,
        handler: async (ev) => {
          const applied = await this.gate.update(ev.data.version, () => this.opts.pool.updateWeights(ev.data.checkpointUri));
          this.log.info(applied ? 'weights reloaded' : 'policy update skipped (not newer)', { version: ev.data.version, uri: ev.data.checkpointUri });
        },
      }),
    );
    this.subs.push(
      await this.bus.subscribe({
        durable: d.rollouts ?? 'policy-serving-rollouts',
        types: ['RolloutRequested'],
        concurrency: this.opts.concurrency ?? 256,
        ackWaitMs: 60_000,
        handler: async (ev, ctx) => {
          const beat = setInterval(() => ctx.working(), 15_000);
          try {
            await this.onRequested(ev);
          } finally {
            clearInterval(beat);
          }
        },
      }),
    );
  }

  async stop(): Promise<void> {
    const subs = this.subs;
    this.subs = [];
    this.tools.failAll(new TransientError('policy-serving stopping'));
    await Promise.allSettled(subs.map((s) => s.drain()));
    this.opts.pool.close();
  }

  private async onRequested(ev: Requested): Promise<void> {
    const id = ev.data.rolloutId;
    if (this.done.has(id)) return;
    const existing = this.running.get(id);
    if (existing) return existing;
    const p = this.runOne(ev).finally(() => this.running.delete(id));
    this.running.set(id, p);
    await p;
    this.done.add(id);
    if (this.done.size > 100_000) this.done.delete(this.done.values().next().value as string);
  }

  private async runOne(ev: Requested): Promise<void> {
    const r = ev.data;
    const version = await this.gate.enter(r.policyVersion, this.opts.versionWaitMs ?? 60_000);
    if (version === null) throw new TransientError(`rollout ${r.rolloutId} asks for policy version ${r.policyVersion}; engines hold ${this.gate.loadedVersion}`);
    const session = this.opts.pool.open(r.rolloutId);
    let result: RolloutResult;
    try {
      const stream = streams.rollout(r.rolloutId);
      result = await runRollout(
        { rolloutId: r.rolloutId, problem: r.problem, sampling: r.samplingParams, budget: r.budget, tool: r.tool, compactPrompt: this.opts.compactPrompt },
        {
          engine: session,
          tools: this.tools.forRollout(ev.runId, ev),
          tokenizer: this.opts.tokenizer,
          onTurn: (t) =>
            this.bus.publish(
              makeEvent('TurnGenerated', {
                runId: ev.runId, streamId: stream, key: `${r.rolloutId}:${t.turn}`, producer: this.producer, causedBy: ev,
                data: { rolloutId: r.rolloutId, turn: t.turn, tokenIds: t.tokenIds, logprobs: t.logprobs, text: t.text, finishReason: t.finishReason, engineId: t.engineId },
              }),
            ),
        },
        this.opts.rollout,
      );
    } catch (e) {
      if (e instanceof InvalidRolloutRequestError) throw new PermanentError(e.message, e.field);
      if (e instanceof ReservationTooLargeError) throw new PermanentError(e.message, 'budget.maxTokens');
      // A 4xx from the engine (e.g. prompt + budget beyond the model context) will not pass on retry.
      if (e instanceof EngineResponseError) throw new PermanentError(e.message, 'problem');
      if (e instanceof EngineError) throw new TransientError(e.message, e);
      throw e;
    } finally {
      session.release();
      this.gate.leave();
    }
    await this.bus.publish(
      makeEvent('RolloutCompleted', {
        runId: ev.runId, streamId: streams.rollout(r.rolloutId), key: r.rolloutId, producer: this.producer, causedBy: ev,
        data: {
          rolloutId: r.rolloutId, groupId: r.groupId, step: r.step, promptId: r.promptId, gold: r.gold,
          engineId: result.engineId, policyVersion: version,
          promptTokenIds: result.promptTokenIds, responseTokenIds: result.responseTokenIds, logprobs: result.logprobs, lossMask: result.lossMask,
          responseText: result.responseText, turns: result.turns, toolCalls: result.toolCalls, toolErrors: result.toolErrors,
          answerBlocks: result.answerBlocks, formatViolations: result.formatViolations, truncated: result.truncated, finishReason: result.finishReason,
        },
      }),
    );
    this.log.debug('rollout completed', { rolloutId: r.rolloutId, turns: result.turns, engineId: result.engineId, finishReason: result.finishReason, ms: result.wallMs });
  }
}
