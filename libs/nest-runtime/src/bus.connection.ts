import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { JetStreamBus, type JetStreamBusOptions } from '@rstar/messaging';
import { createLogger } from '@rstar/telemetry';
import { Dependency } from './dependency';
import type { ReadinessRegistry } from './readiness.registry';

/**
 * The service's JetStream bus as a {@link Dependency}: connects in the background from module init,
 * retrying until NATS answers (the stream is ensured on connect); ready while the connection is open
 * (the client reconnects by itself after a broker restart; meanwhile readiness reports `reconnecting`).
 * Closed (subscriptions drained) at application shutdown, after the workers stopped.
 */
export class BusConnection extends Dependency<JetStreamBus> implements OnModuleInit, OnApplicationShutdown {
  private connected = true;

  constructor(opts: JetStreamBusOptions, registry: ReadinessRegistry) {
    const log = createLogger(opts.name ?? 'bus');
    super(
      'nats',
      async () => {
        const bus = await JetStreamBus.connect({ ...opts, logger: log });
        void this.watch(bus);
        return bus;
      },
      (bus) => bus.close(),
      log,
    );
    registry.register({
      name: 'nats',
      probe: () => {
        const s = this.state();
        return { ready: s.ready && this.connected, details: { attempts: s.attempts, lastError: s.lastError, reconnecting: s.ready && !this.connected } };
      },
    });
  }

  /** Track disconnects and reconnects so readiness tells the truth while the client reconnects. */
  private async watch(bus: JetStreamBus): Promise<void> {
    for await (const s of bus.nc.status()) {
      if (s.type === 'disconnect') this.connected = false;
      else if (s.type === 'reconnect') this.connected = true;
    }
  }

  onModuleInit(): void {
    this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
