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
  /**
   * @param leastPrivilege secured mode (`RSTAR_REQUIRE_AUTH`): a connection whose role could rewrite the
   * archive ({@link EventStore.privilegeProblem}: a superuser, the owner) is refused; the service stays
   * not ready, naming the role and the fix, and checks again on each retry.
   */
  constructor(opts: EventStoreOptions, registry: ReadinessRegistry, service: string, leastPrivilege = false) {
    super('postgres', () => connectStore(opts, leastPrivilege), (s) => s.close(), createLogger(service));
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

/** Connect, and in secured mode refuse a role that could rewrite the archive. */
async function connectStore(opts: EventStoreOptions, leastPrivilege: boolean): Promise<EventStore> {
  const store = await EventStore.connect(opts);
  const problem = leastPrivilege ? await store.privilegeProblem().catch(async (e) => {
    await store.close();
    throw e;
  }) : null;
  if (problem) {
    await store.close();
    throw new Error(
      `RSTAR_DATABASE_URL: ${problem}; with RSTAR_REQUIRE_AUTH a service uses its own role (\`rstar db roles\` writes the URLs) and RSTAR_DB_MIGRATE=false, and only \`rstar db migrate\` runs as the owner`,
    );
  }
  return store;
}
