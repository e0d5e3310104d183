import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { openRunsSource, ResamplingHandler } from '@rstar/groups';
import { BackgroundWorker, BusConnection, ReadinessRegistry, StoreConnection, type Stoppable } from '@rstar/nest-runtime';
import type { ResamplingEnv } from './resampling.config';

/** GRPO-RoC group collection (`RewardAssigned` -> `GroupResampled`), once NATS and Postgres are up. */
@Injectable()
export class ResamplingWorker extends BackgroundWorker {
  constructor(
    private readonly bus: BusConnection,
    private readonly store: StoreConnection,
    private readonly cfg: ConfigService<ResamplingEnv, true>,
    registry: ReadinessRegistry,
  ) {
    super('resampling', registry);
  }

  protected async launch(): Promise<Stoppable> {
    const [bus, store] = await Promise.all([this.bus.ready(), this.store.ready()]);
    const handler = new ResamplingHandler(bus, { store: openRunsSource(store), durable: this.cfg.get('RSTAR_RESAMPLING_DURABLE', { infer: true }) });
    await handler.start();
    return handler;
  }
}
