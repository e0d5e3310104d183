import { makeEvent, streams, toolCallCompletedData, type RstarEvent } from '@rstar/contracts';
import { TransientError, withHeartbeat, type EventBus, type Subscription } from '@rstar/messaging';
import type { SandboxPool } from '@rstar/sandbox';
import { inSpan, SpanStatusCode } from '@rstar/telemetry';
import { executeMeasured, type ToolExecutionMetrics } from './tool-execution.metrics';

/** Options of {@link ToolExecutionHandler}. */
export interface ToolExecutionHandlerOptions {
  /** Durable consumer name (instances sharing it share the work). Default `tool-execution`. */
  durable?: string;
  /** Calls in flight from the bus (default 2x the pool's workers, so workers never idle). */
  concurrency?: number;
  producer?: string;
  metrics?: ToolExecutionMetrics;
  /** Characters kept per stream (default: the pool's, 1,000 per docs/design/protocol.md §3). */
  outputChars?: number;
  /**
   * Ack wait of the consumer in ms (default 90 000): how long a killed instance's calls wait before another
   * instance gets them. A call in progress heartbeats every third of it, however long it queues or runs.
   */
  ackWaitMs?: number;
}

/**
 * The JetStream flow of tool-execution (docs/design/architecture.md §5): consumes `ToolCallRequested`, runs the
 * program in the {@link SandboxPool}, publishes `ToolCallCompleted` (deterministic id per `callId`, so
 * a redelivered request re-emits the same event and the bus drops the copy). The `jupyter_code` tool
 * runs in the rollout's session (`session` or else the rollout id). An `overloaded` pool is a
 * transient failure: the request is redelivered later instead of failing the model's call.
 */
export class ToolExecutionHandler {
  private sub: Subscription | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly pool: SandboxPool,
    private readonly opts: ToolExecutionHandlerOptions = {},
  ) {}

  async start(): Promise<void> {
    if (this.sub) return;
    const ackWaitMs = this.opts.ackWaitMs ?? 90_000;
    this.sub = await this.bus.subscribe({
      durable: this.opts.durable ?? 'tool-execution',
      types: ['ToolCallRequested'],
      concurrency: this.opts.concurrency ?? Math.max(2, this.pool.health().workers.total * 2),
      ackWaitMs,
      handler: (ev, ctx) => withHeartbeat(ctx, ackWaitMs, () => this.handle(ev)),
    });
  }

  /** Execute one request and publish its completion. @throws TransientError when the pool is overloaded. */
  async handle(ev: RstarEvent<'ToolCallRequested'>): Promise<void> {
    const d = ev.data;
    const session = d.tool === 'jupyter_code' ? (d.session ?? d.rolloutId) : (d.session ?? undefined);
    const req = {
      code: d.code,
      input: d.input,
      timeoutMs: d.limits.timeoutMs,
      memoryMb: d.limits.memoryMb,
      session,
      outputChars: this.opts.outputChars,
    };
    const attributes = { 'rstar.rollout.id': d.rolloutId, 'rstar.tool.call_id': d.callId, 'rstar.tool.name': d.tool, 'rstar.tool.timeout_ms': d.limits.timeoutMs };
    // The sandbox's own verdict is an attribute; only a failure of the sandbox itself is a span error.
    const r = await inSpan('sandbox.execute', { attributes }, async (span) => {
      const res = this.opts.metrics ? await executeMeasured(this.pool, this.opts.metrics, req) : await this.pool.execute(req);
      span.setAttributes({ 'rstar.tool.status': res.status, 'rstar.tool.wall_ms': res.wallMs, 'rstar.tool.cpu_ms': res.cpuMs, 'rstar.tool.exit_code': res.exitCode ?? -1, 'rstar.tool.truncated': res.truncated });
      if (res.status === 'sandbox_error' || res.status === 'overloaded') span.setStatus({ code: SpanStatusCode.ERROR, message: res.status });
      return res;
    });
    if (r.status === 'overloaded') throw new TransientError(`sandbox overloaded; call ${d.callId} will be retried`);
    await this.bus.publish(
      makeEvent('ToolCallCompleted', {
        runId: ev.runId,
        streamId: streams.rollout(d.rolloutId),
        key: d.callId,
        producer: this.opts.producer ?? 'tool-execution',
        causedBy: ev,
        data: toolCallCompletedData(d, r),
      }),
    );
  }

  async stop(): Promise<void> {
    const s = this.sub;
    this.sub = null;
    await s?.drain();
  }
}
