import { Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { SympySandboxBackend } from '@rstar/grader';
import { BackgroundWorker, BusConnection, ReadinessRegistry, type Stoppable } from '@rstar/nest-runtime';
import { RewardGradingHandler } from '@rstar/rewards';
import { SandboxPool } from '@rstar/sandbox';
import { createLogger } from '@rstar/telemetry';
import type { RewardGradingEnv } from './reward-grading.config';

/**
 * reward-grading's own small sandbox pool: sympy checks that could hang run there under a time limit,
 * as rStar2 sends verification to its code service. Started at module init, closed last.
 */
@Injectable()
export class SympyPool implements OnModuleInit, OnApplicationShutdown {
  readonly pool: SandboxPool;

  constructor(cfg: ConfigService<RewardGradingEnv, true>, registry: ReadinessRegistry) {
    const log = createLogger('reward-grading');
    this.pool = new SandboxPool({ workers: cfg.get('RSTAR_GRADER_SANDBOX_WORKERS', { infer: true }), onWarning: (m) => log.warn(m) });
    registry.register({ name: 'sympy-sandbox', probe: () => ({ ready: this.pool.health().ok }) });
  }

  async onModuleInit(): Promise<void> {
    await this.pool.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.close();
  }
}

/** The `RolloutCompleted` -> `RewardAssigned` handler, once NATS is up. */
@Injectable()
export class RewardsWorker extends BackgroundWorker {
  constructor(
    private readonly bus: BusConnection,
    private readonly sympy: SympyPool,
    private readonly cfg: ConfigService<RewardGradingEnv, true>,
    registry: ReadinessRegistry,
  ) {
    super('rewards', registry);
  }

  protected async launch(): Promise<Stoppable> {
    const handler = new RewardGradingHandler(await this.bus.ready(), {
      symbolic: new SympySandboxBackend(this.sympy.pool),
      timeoutMs: this.cfg.get('RSTAR_GRADER_SYMBOLIC_TIMEOUT_MS', { infer: true }),
      durable: this.cfg.get('RSTAR_GRADER_DURABLE', { infer: true }),
      ackWaitMs: this.cfg.get('RSTAR_ACK_WAIT_MS', { infer: true }),
    });
    await handler.start();
    return handler;
  }
}
