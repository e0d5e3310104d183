import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { createEngines } from '@rstar/engines';
import { BackgroundWorker, BusConnection, ReadinessRegistry, StoreConnection, type Stoppable } from '@rstar/nest-runtime';
import { RunStartConsumer } from '@rstar/training';
import type { OptimizationEnv } from './optimization.config';

/** Drives runs submitted by `rstar train --remote` (`RunStarted`), once NATS and Postgres are up. */
@Injectable()
export class RunStartWorker extends BackgroundWorker {
  private consumer: RunStartConsumer | null = null;

  constructor(
    private readonly bus: BusConnection,
    private readonly store: StoreConnection,
    private readonly cfg: ConfigService<OptimizationEnv, true>,
    registry: ReadinessRegistry,
  ) {
    super('runs', registry);
  }

  protected details(): Record<string, unknown> {
    return { activeRun: this.consumer?.active ?? null };
  }

  protected async launch(): Promise<Stoppable> {
    const [bus, store] = await Promise.all([this.bus.ready(), this.store.ready()]);
    const consumer = new RunStartConsumer(bus, store, {
      engines: createEngines(this.cfg.get('RSTAR_ENGINES', { infer: true })),
      checkpointRoot: this.cfg.get('RSTAR_CHECKPOINT_DIR', { infer: true }),
      durable: this.cfg.get('RSTAR_RUNS_DURABLE', { infer: true }),
      trainerUrl: this.cfg.get('RSTAR_TRAINER_URL', { infer: true }),
      batchDir: this.cfg.get('RSTAR_BATCH_DIR', { infer: true }),
      log: (msg, fields) => this.log.info(msg, fields),
    });
    await consumer.start();
    this.consumer = consumer;
    return consumer;
  }
}
