import type { ExecRequest, ExecResult, ToolExecutor } from '@rstar/agent';
import { makeEvent, streams, type EventEnvelope, type RstarEvent, RstarError } from '@rstar/contracts';
import type { EventBus } from '@rstar/messaging';
import { inSpan, SpanKind } from '@rstar/telemetry';

/** A tool call whose `ToolCallCompleted` did not arrive in time. */
export class ToolResultTimeoutError extends RstarError {
  constructor(readonly callId: string, ms: number) {
    super('tool_result_timeout', `no ToolCallCompleted for ${callId} within ${ms} ms; is tool-execution running?`);
  }
}

type Completed = RstarEvent<'ToolCallCompleted'>;

/**
 * {@link ToolExecutor} over the bus: `execute` publishes `ToolCallRequested` (deterministic id
 * `ToolCallRequested:<callId>`) and resolves when the matching `ToolCallCompleted` is fed to
 * {@link complete}. Every completion is also kept for `keepMs` (default 10 min; at most 10,000): one that
 * arrives before anyone waits (a restart), or a result a failed attempt already consumed, is what a
 * retried rollout gets when it re-requests the call, instead of waiting for a call the bus deduplicated.
 */
export class BusToolExecutor implements ToolExecutor {
  private readonly waiting = new Map<string, { resolve: (r: ExecResult) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly early = new Map<string, { result: ExecResult; at: number }>();

  constructor(
    private readonly bus: EventBus,
    private readonly ctx: { runId: string; producer: string; causedBy: Pick<EventEnvelope, 'id' | 'meta'> | null },
    private readonly opts: { resultTimeoutMs: number; keepMs?: number; clock?: () => number },
    private readonly shared: { waiting: BusToolExecutor['waiting']; early: BusToolExecutor['early'] } = { waiting: new Map(), early: new Map() },
  ) {
    this.waiting = shared.waiting;
    this.early = shared.early;
  }

  /** A child executor for one rollout's run/cause, sharing this one's routing tables. */
  forRollout(runId: string, causedBy: Pick<EventEnvelope, 'id' | 'meta'>): BusToolExecutor {
    return new BusToolExecutor(this.bus, { runId, producer: this.ctx.producer, causedBy }, this.opts, { waiting: this.waiting, early: this.early });
  }

  /**
   * Publish the call and wait for its result, inside a client span `tool_call` (its `ToolCallRequested`
   * carries the span, so tool-execution's handling is a child of it) with the call's status and wall time.
   */
  execute(req: ExecRequest): Promise<ExecResult> {
    const attributes = { 'rstar.rollout.id': req.rolloutId, 'rstar.tool.call_id': req.callId, 'rstar.tool.name': req.tool, 'rstar.turn': req.turn };
    return inSpan('tool_call', { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const r = await this.executeOnBus(req);
      span.setAttributes({ 'rstar.tool.status': r.status, 'rstar.tool.wall_ms': r.wallMs });
      return r;
    });
  }

  private async executeOnBus(req: ExecRequest): Promise<ExecResult> {
    const kept = this.early.get(req.callId);
    if (kept) return kept.result;
    const result = new Promise<ExecResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(req.callId);
        reject(new ToolResultTimeoutError(req.callId, this.opts.resultTimeoutMs));
      }, this.opts.resultTimeoutMs);
      this.waiting.set(req.callId, { resolve, reject, timer });
    });
    // Registered before publishing, so a fast completion cannot be missed.
    await this.bus.publish(
      makeEvent('ToolCallRequested', {
        runId: this.ctx.runId,
        streamId: streams.rollout(req.rolloutId),
        key: req.callId,
        producer: this.ctx.producer,
        causedBy: this.ctx.causedBy,
        data: {
          callId: req.callId, rolloutId: req.rolloutId, turn: req.turn, tool: req.tool, code: req.code, input: req.input,
          session: req.session, limits: { timeoutMs: req.timeoutMs, memoryMb: req.memoryMb },
        },
      }),
    ).catch((e: unknown) => {
      const w = this.waiting.get(req.callId);
      if (w) { clearTimeout(w.timer); this.waiting.delete(req.callId); }
      throw e;
    });
    return result;
  }

  /** Route a `ToolCallCompleted` to its waiting call and keep it (idempotent: a duplicate replaces its copy). */
  complete(ev: Completed): void {
    const d = ev.data;
    const result: ExecResult = { status: d.status, stdout: d.stdout, stderr: d.stderr, exitCode: d.exitCode, signal: d.signal, wallMs: d.wallMs, cpuMs: d.cpuMs, truncated: d.truncated };
    const w = this.waiting.get(d.callId);
    if (w) {
      clearTimeout(w.timer);
      this.waiting.delete(d.callId);
      w.resolve(result);
    }
    const now = (this.opts.clock ?? Date.now)();
    this.early.delete(d.callId); // re-inserted last: Map order = oldest first
    this.early.set(d.callId, { result, at: now });
    const keep = this.opts.keepMs ?? 600_000;
    for (const [k, v] of this.early) {
      if (now - v.at <= keep && this.early.size <= 10_000) break;
      this.early.delete(k);
    }
  }

  /** Fail every waiting call (shutdown). */
  failAll(err: Error): void {
    for (const w of this.waiting.values()) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiting.clear();
  }
}
