import { Inject, Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { BackgroundWorker, BusConnection, ReadinessRegistry, type Stoppable } from '@rstar/nest-runtime';
import type { SandboxPool } from '@rstar/sandbox';
import { NatsExecuteResponder, ToolExecutionHandler, type ToolExecutionMetrics } from '@rstar/tool-calls';
import { SandboxPoolLifecycle } from './sandbox-pool.provider';
import { SANDBOX_POOL, TOOL_METRICS } from './tokens';
import type { ToolExecutionEnv } from './tool-execution.config';

/**
 * The bus side of tool-execution, once NATS is up: the durable `ToolCallRequested` -> `ToolCallCompleted`
 * handler and the `tool.execute` request/reply responder (queue group, so replicas share the load),
 * started only once the sandbox pool runs (see {@link SandboxPoolLifecycle}).
 */
@Injectable()
export class ToolCallsWorker extends BackgroundWorker {
  constructor(
    private readonly bus: BusConnection,
    private readonly cfg: ConfigService<ToolExecutionEnv, true>,
    @Inject(SANDBOX_POOL) private readonly pool: SandboxPool,
    @Inject(TOOL_METRICS) private readonly metrics: ToolExecutionMetrics,
    private readonly lifecycle: SandboxPoolLifecycle,
    registry: ReadinessRegistry,
  ) {
    super('tool-calls', registry);
  }

  protected async launch(): Promise<Stoppable> {
    // No tool call is taken while the pool cannot run programs isolated (it stays queued on the bus).
    await this.lifecycle.whenRunning();
    const bus = await this.bus.ready();
    const handler = new ToolExecutionHandler(bus, this.pool, { metrics: this.metrics, durable: this.cfg.get('RSTAR_TOOL_DURABLE', { infer: true }), ackWaitMs: this.cfg.get('RSTAR_ACK_WAIT_MS', { infer: true }) });
    await handler.start();
    const responder = new NatsExecuteResponder(bus.nc, this.pool, { subject: this.cfg.get('RSTAR_TOOL_EXECUTE_SUBJECT', { infer: true }), metrics: this.metrics });
    responder.start();
    return {
      stop: async () => {
        await responder.stop();
        await handler.stop();
      },
    };
  }
}
