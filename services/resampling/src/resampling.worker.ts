import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { openRunsSource, ResamplingHandler } from '@rstar/groups';
import { BackgroundWorker, BusConnection, ReadinessRegistry, StoreConnection, type Stoppable } from '@rstar/nest-runtime';
import type { ResamplingEnv } from './resampling.config';

/** GRPO-RoC group collection (`RewardAssigned` -> `GroupResampled`), once NATS and Postgres are up and the archive caught up. */
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
    // The open groups are rebuilt from the archive: first let the archiver (control-plane's durable
    // `archiver`) store everything this service's consumer may have acked before a restart — it can be
    // behind after a Postgres restart, and a group read without its acked rewards would never complete.
    // No archiver durable yet (a first start before control-plane's): nothing to wait for.
    let waits = 0;
    await bus.waitForConsumer('archiver', { resolveIfMissing: true, onWait: (reason) => void (waits++ % 10 === 0 && this.log.info('waiting for the archive to catch up', { reason })) });
    const handler = new ResamplingHandler(bus, { store: openRunsSource(store), durable: this.cfg.get('RSTAR_RESAMPLING_DURABLE', { infer: true }) });
    await handler.start();
    return handler;
  }
}
