import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { openRunsSource, ResamplingHandler } from '@rstar/groups';
import { BackgroundWorker, BusConnection, ReadinessRegistry, ReadModelsConnection, StoreConnection, type Stoppable } from '@rstar/nest-runtime';
import type { ResamplingEnv } from './resampling.config';

/**
 * GRPO-RoC group collection (`RewardAssigned` -> `GroupResampled`), once NATS and Postgres are up. A
 * restart rebuilds the open groups from the runs the read models show running (plus those with events
 * not projected yet), each read with one per-run query of the archive.
 */
@Injectable()
export class ResamplingWorker extends BackgroundWorker {
  constructor(
    private readonly bus: BusConnection,
    private readonly store: StoreConnection,
    private readonly readModels: ReadModelsConnection,
    private readonly cfg: ConfigService<ResamplingEnv, true>,
    registry: ReadinessRegistry,
  ) {
    super('resampling', registry);
  }

  protected async launch(): Promise<Stoppable> {
    const [bus, store, rm] = await Promise.all([this.bus.ready(), this.store.ready(), this.readModels.ready()]);
    const source = openRunsSource(store, { runs: () => rm.openRunIds() });
    const handler = new ResamplingHandler(bus, { store: source, durable: this.cfg.get('RSTAR_RESAMPLING_DURABLE', { infer: true }) });
    await handler.start();
    return handler;
  }
}
