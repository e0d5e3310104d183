import { Inject, Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { createEngines, DEFAULT_RETRY, runEngineSpecs } from '@rstar/engines';
import { BackgroundWorker, BusConnection, ReadinessRegistry, SECURITY_SETTINGS, StoreConnection, type Stoppable } from '@rstar/nest-runtime';
import type { SecuritySettings } from '@rstar/security';
import { RunStartConsumer } from '@rstar/step-driver';
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
    @Inject(SECURITY_SETTINGS) private readonly security: SecuritySettings,
  ) {
    super('runs', registry);
  }

  protected details(): Record<string, unknown> {
    return { activeRun: this.consumer?.active ?? null };
  }

  protected async launch(): Promise<Stoppable> {
    const [bus, store] = await Promise.all([this.bus.ready(), this.store.ready()]);
    const consumer = new RunStartConsumer(bus, store, {
      // The run config names the engines; RSTAR_ENGINES fills the URLs it leaves out.
      engines: (config) => createEngines(runEngineSpecs(config.engines, this.cfg.get('RSTAR_ENGINES', { infer: true })), DEFAULT_RETRY, { apiKey: this.security.engineApiKey }),
      checkpointRoot: this.cfg.get('RSTAR_CHECKPOINT_DIR', { infer: true }),
      durable: this.cfg.get('RSTAR_RUNS_DURABLE', { infer: true }),
      ackWaitMs: this.cfg.get('RSTAR_RUNS_ACK_WAIT_MS', { infer: true }),
      trainerUrl: this.cfg.get('RSTAR_TRAINER_URL', { infer: true }),
      batchDir: this.cfg.get('RSTAR_BATCH_DIR', { infer: true }),
      // A run resumes from the archive: first let control-plane's archiver (durable `archiver`) store what
      // the stages published, which may lag after a Postgres restart.
      archiveCaughtUp: (working) => bus.waitForConsumer('archiver', { resolveIfMissing: true, onWait: () => working() }),
      log: (msg, fields) => this.log.info(msg, fields),
    });
    await consumer.start();
    this.consumer = consumer;
    return consumer;
  }
}
