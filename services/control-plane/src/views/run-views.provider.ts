import { Injectable } from '@nestjs/common';
import type { EventStore } from '@rstar/event-store';
import { StoreConnection } from '@rstar/nest-runtime';
import { EventStoreRunViews, type RunViewReader } from '@rstar/run-views';

/**
 * The dashboard's reader: @rstar/run-views over the archive control-plane is connected to. Built once
 * per connected store (a reconnect gives a new one). @throws DependencyNotReadyError before Postgres is up.
 */
@Injectable()
export class RunViewsProvider {
  private built: { store: EventStore; reader: RunViewReader } | null = null;

  constructor(private readonly store: StoreConnection) {}

  reader(): RunViewReader {
    const store = this.store.current();
    if (this.built?.store !== store) this.built = { store, reader: new EventStoreRunViews(store) };
    return this.built.reader;
  }
}
