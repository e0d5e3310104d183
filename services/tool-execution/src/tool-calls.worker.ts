import { Inject, Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { BackgroundWorker, BusConnection, ReadinessRegistry, type Stoppable } from '@rstar/nest-runtime';
import type { SandboxPool } from '@rstar/sandbox';
import { NatsExecuteResponder, ToolExecutionHandler, type ToolExecutionMetrics } from '@rstar/tool-calls';
import { SANDBOX_POOL, TOOL_METRICS } from './tokens';
import type { ToolExecutionEnv } from './tool-execution.config';

/**
 * The bus side of tool-execution, once NATS is up: the durable `ToolCallRequested` -> `ToolCallCompleted`
 * handler and the `tool.execute` request/reply responder (queue group, so replicas share the load).
 */
@Injectable()
export class ToolCallsWorker extends BackgroundWorker {
  constructor(
    private readonly bus: BusConnection,
    private readonly cfg: ConfigService<ToolExecutionEnv, true>,
    @Inject(SANDBOX_POOL) private readonly pool: SandboxPool,
    @Inject(TOOL_METRICS) private readonly metrics: ToolExecutionMetrics,
    registry: ReadinessRegistry,
  ) {
    super('tool-calls', registry);
  }

  protected async launch(): Promise<Stoppable> {
    const bus = await this.bus.ready();
    const handler = new ToolExecutionHandler(bus, this.pool, { metrics: this.metrics, durable: this.cfg.get('RSTAR_TOOL_DURABLE', { infer: true }) });
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
