import type { connect } from '@nats-io/transport-node';
import type { ExecResult, SandboxPool } from '@rstar/sandbox';
import { INVALID_REQUEST_PREFIX, poolResult } from '@rstar/sandbox';
import { executeMeasured, type ToolExecutionMetrics } from './tool-execution.metrics';

type NatsConnection = Awaited<ReturnType<typeof connect>>;
type NatsSubscription = ReturnType<NatsConnection['subscribe']>;
/** The part of a NATS message the responder uses (nats-core types are not visible under node10 resolution). */
interface RequestMsg {
  string(): string;
  reply?: string;
  respond(data: string): boolean;
}

/** Default request/reply subject and queue group. */
export const TOOL_EXECUTE_SUBJECT = 'tool.execute';
export const TOOL_EXECUTE_QUEUE = 'tool-execution';

/**
 * Core-NATS request/reply `tool.execute` (queue group: instances share requests). Request body: an
 * `ExecRequest` as JSON; reply: the `ExecResult` as JSON. A body that is not JSON gets a
 * `invalid_request` result naming the problem; nothing a client sends can crash the responder.
 */
export class NatsExecuteResponder {
  private sub: NatsSubscription | null = null;
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly pool: SandboxPool,
    private readonly opts: { subject?: string; queue?: string; metrics?: ToolExecutionMetrics } = {},
  ) {}

  start(): void {
    if (this.sub) return;
    this.sub = this.nc.subscribe(this.opts.subject ?? TOOL_EXECUTE_SUBJECT, {
      queue: this.opts.queue ?? TOOL_EXECUTE_QUEUE,
      callback: (err: Error | null, msg: RequestMsg) => {
        if (err) return;
        const p = (async () => {
          let result: ExecResult;
          try {
            const req = JSON.parse(msg.string()) as unknown;
            result = this.opts.metrics
              ? await executeMeasured(this.pool, this.opts.metrics, req as never)
              : await this.pool.execute(req as never);
          } catch (e) {
            result = poolResult('invalid_request', `${INVALID_REQUEST_PREFIX}body must be a JSON object like {"code": "print(1)"} (${(e as Error).message})`);
          }
          if (msg.reply) msg.respond(JSON.stringify(result));
        })().catch(() => undefined);
        this.inflight.add(p);
        void p.finally(() => this.inflight.delete(p));
      },
    });
  }

  /** Stop taking requests and wait for the ones in flight to be answered. */
  async stop(): Promise<void> {
    const s = this.sub;
    this.sub = null;
    s?.unsubscribe();
    await Promise.all([...this.inflight]);
  }
}
