import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { EventStore, type EventStoreOptions } from '@rstar/event-store';
import { createLogger } from '@rstar/telemetry';
import { Dependency } from './dependency';
import type { ReadinessRegistry } from './readiness.registry';

/**
 * The Postgres event archive as a {@link Dependency}: connects (and migrates) in the background,
 * retrying until Postgres answers. Readiness runs a cheap query, so a Postgres restart shows as
 * not-ready until the pool reconnects.
 */
export class StoreConnection extends Dependency<EventStore> implements OnModuleInit, OnApplicationShutdown {
  constructor(opts: EventStoreOptions, registry: ReadinessRegistry, service: string) {
    super('postgres', () => EventStore.connect(opts), (s) => s.close(), createLogger(service));
    registry.register({
      name: 'postgres',
      probe: async () => {
        const s = this.state();
        if (!s.ready) return { ready: false, details: { attempts: s.attempts, lastError: s.lastError } };
        await this.current().ping();
        return { ready: true };
      },
    });
  }

  onModuleInit(): void {
    this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
