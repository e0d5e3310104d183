import { RstarError } from '@rstar/contracts';
import { EventStore, startEmbeddedPostgres, type EmbeddedPostgres } from '@rstar/event-store';
import { createLogger, type Logger } from '@rstar/telemetry';
import { type EventBus, type RawPublisher, InProcessBus, JetStreamBus, securedBusOptionsFromEnv } from '@rstar/messaging';
import { Archiver, type ArchiverOptions } from './archiver';

/** A bad runtime configuration; the message names the setting and the fix. */
/** `flush()` gave up: the archiver still had events to store after the timeout. */
export class ArchiverBehindError extends RstarError {
  constructor(timeoutMs: number) {
    super('archiver_behind', `archiver still behind after ${timeoutMs} ms (is the archive's Postgres slow or down?)`);
  }
}

export class RuntimeConfigError extends RstarError {
  declare readonly field: string;
  constructor(message: string, field: string) {
    super('invalid_runtime_config', message, field);
  }
}

export interface RuntimeOptions {
  /** NATS URL; default env `RSTAR_NATS_URL` (pass `""` to ignore the env). Set = distributed mode (JetStream bus). */
  natsUrl?: string;
  /** Postgres URL; default env `RSTAR_DATABASE_URL` (pass `""` to ignore the env). Unset = embedded PGlite. */
  databaseUrl?: string;
  /** Event-store schema (default `rstar`). */
  schema?: string;
  /** PGlite data directory in standalone mode (default: in memory). */
  dataDir?: string;
  /** JetStream stream name and subject prefix (defaults `RSTAR`, `rstar`). */
  stream?: string;
  subjectPrefix?: string;
  /**
   * Run an archiver in this process. Default: true with the in-process bus (nothing else could archive
   * it), false with JetStream (the control-plane service archives).
   */
  archive?: boolean;
  /** Settings of the in-process archiver. */
  archiver?: Omit<ArchiverOptions, 'logger'>;
  /** Client name shown by NATS (default `rstar`). */
  name?: string;
  /**
   * Whose bus credentials to use on a secured NATS (`RSTAR_SECRETS_DIR`, `RSTAR_NATS_*`, signing key):
   * default `cli`, the operator's principal. Without credentials in the environment, the open bus.
   */
  principal?: string;
  logger?: Logger;
}

/** The bus and the archive a process works against. */
export interface Runtime {
  /** `standalone` = in-process bus (PGlite or a given Postgres); `distributed` = JetStream. */
  mode: 'standalone' | 'distributed';
  bus: EventBus & RawPublisher;
  store: EventStore;
  /** The Postgres URL in use (the embedded server's URL in standalone mode), for other `pg`/TypeORM clients. */
  databaseUrl: string;
  /** The in-process archiver, when this process runs one. */
  archiver: Archiver | null;
  /** Wait until the archiver has stored everything published so far (no-op without an archiver). */
  flush(timeoutMs?: number): Promise<void>;
  /** Flush, stop the archiver, close the bus, the store and the embedded database. */
  close(): Promise<void>;
}

/**
 * Open the runtime: standalone (the default when neither `RSTAR_NATS_URL` nor `RSTAR_DATABASE_URL`
 * is set: PGlite behind its wire-protocol server + {@link InProcessBus} + an in-process {@link Archiver}) or
 * distributed (NATS URL set: {@link JetStreamBus} + Postgres). With only a database URL, the bus is
 * in-process and the archive is that Postgres. Lives in libs/messaging (which depends on
 * libs/event-store, never the reverse) so the CLI can use it without importing a service.
 * Throws {@link RuntimeConfigError} when a NATS URL is given without a database URL.
 */
export async function connectRuntime(opts: RuntimeOptions = {}): Promise<Runtime> {
  const log = opts.logger ?? createLogger('runtime');
  const natsUrl = opts.natsUrl ?? (process.env.RSTAR_NATS_URL || undefined);
  let databaseUrl = opts.databaseUrl ?? (process.env.RSTAR_DATABASE_URL || undefined);
  if (natsUrl && !databaseUrl) {
    throw new RuntimeConfigError(
      'distributed mode needs Postgres: set RSTAR_DATABASE_URL (or option "databaseUrl") alongside RSTAR_NATS_URL',
      'databaseUrl',
    );
  }
  let embedded: EmbeddedPostgres | null = null;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({ dataDir: opts.dataDir });
    databaseUrl = embedded.url;
  }
  let store: EventStore;
  try {
    store = await EventStore.connect({ connectionString: databaseUrl, schema: opts.schema });
  } catch (e) {
    await embedded?.close();
    throw e;
  }
  const bus: EventBus & RawPublisher = natsUrl
    ? await JetStreamBus.connect({
        servers: natsUrl,
        stream: opts.stream,
        subjectPrefix: opts.subjectPrefix,
        name: opts.name,
        logger: opts.logger,
        ...securedBusOptionsFromEnv(opts.principal ?? 'cli'),
      })
    : new InProcessBus({ subjectPrefix: opts.subjectPrefix, logger: opts.logger });
  const mode = natsUrl ? 'distributed' : 'standalone';
  const archiver = (opts.archive ?? !natsUrl) ? new Archiver(bus, store, { ...opts.archiver, logger: opts.logger }) : null;
  await archiver?.start();
  log.info('runtime ready', { mode, embeddedPostgres: !!embedded, archiver: !!archiver });

  const flush = async (timeoutMs = 60_000): Promise<void> => {
    if (!archiver) return;
    const t0 = Date.now();
    while ((await archiver.lag()) > 0) {
      if (Date.now() - t0 > timeoutMs) throw new ArchiverBehindError(timeoutMs);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  let closed = false;
  return {
    mode,
    bus,
    store,
    databaseUrl,
    archiver,
    flush,
    close: async () => {
      if (closed) return;
      closed = true;
      await flush().catch((e) => log.warn('closing with events not archived', { err: e }));
      await archiver?.stop();
      await bus.close();
      await store.close();
      await embedded?.close();
    },
  };
}
