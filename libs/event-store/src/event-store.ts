import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { parseEvent, type EventType, type RstarEvent } from '@rstar/contracts';
import { CorruptEventError, EventStoreConfigError } from './errors';
import { checkArchiveMigrated, migrateArchive } from './migrations.runner';
import { readIdCollisions, readQuarantine, writeQuarantine, type QuarantinedEvent } from './quarantine';
import { ArchiveChain } from './chain';
import { copyAppend } from './copy-append';
import { planAppend, type AppendRow, type Collision, type PlannedRow } from './append.plan';
import type { ChainReport, ChainRow } from './hash-chain';
import type { ChainCheckpoints } from './chain.checkpoints';
import { START, type LogPosition } from './position';
import { withoutNul } from './nul.sanitizer';

/** An archived event: the envelope (upcast to the current version) plus its place in the log. */
export type StoredEvent = RstarEvent & {
  globalPosition: number;
  streamPosition: number;
  txid: string;
  archivedAt: string;
};

/** A page of events and the position to continue after (unchanged when the page is empty). */
export interface EventPage {
  events: StoredEvent[];
  last: LogPosition;
}

/** One run as seen by the archive. */
export interface RunSummary {
  runId: string;
  events: number;
  firstAt: string;
  lastAt: string;
  status: 'running' | 'completed' | 'failed';
}

export interface EventStoreOptions {
  /** Postgres URL (`postgres://user:pass@host:port/db`); or pass `pool`. */
  connectionString?: string;
  /** An existing pool (not closed by {@link EventStore.close}). */
  pool?: Pool;
  /** Schema holding the tables (default `rstar`); tests use a fresh one each. */
  schema?: string;
  /** Pool size when the store creates its pool (default 4). */
  maxConnections?: number;
  /**
   * How {@link EventStore.appendBatch} writes: `'unnest'` (works on PGlite too), `'copy'` (the COPY
   * fast path; real Postgres only, PGlite's socket server cannot COPY), or `'auto'` (default): COPY
   * unless the server reports itself as PGlite.
   */
  appendMethod?: 'auto' | 'unnest' | 'copy';
  /**
   * Run pending migrations at connect (default true). False for a service's least-privilege role, which may
   * not change the schema: connect then checks the archive is at the latest migration
   * (@throws EventStoreConfigError naming `rstar db migrate` otherwise).
   */
  migrate?: boolean;
}

export interface AppendResult {
  /** Events newly stored. */
  appended: number;
  /** Events dropped because their id was already stored (or repeated in the batch) with the same content. */
  duplicates: number;
  /** Dead letters recorded in the quarantine table (outside the runs' chains). */
  quarantined: number;
  /** Events whose id was taken by different content: recorded in the quarantine, and an alarm for the caller. */
  collisions: Array<{ id: string; reason: string }>;
}

const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The append-only event archive on Postgres (docs/design/architecture.md §4), also on PGlite through the embedded wire-protocol server (startEmbeddedPostgres).
 * Appends are one `INSERT ... SELECT FROM unnest(...)` per batch with `ON CONFLICT (id) DO NOTHING`,
 * or on real Postgres (`appendMethod` `'auto'`/`'copy'`) a COPY of the new rows ({@link copyAppend});
 * appends to a stream are serialised by a transaction-scoped advisory lock per stream so
 * `stream_position` is gap-free (1, 2, 3, ...) per stream. Readers upcast with `parseEvent`.
 */
export class EventStore {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly ownsPool: boolean;
  private readonly t: string;
  /** The tamper evidence: hash chain checks and the signed checkpoints (chain.ts). */
  readonly chain: ArchiveChain;

  private constructor(
    pool: Pool,
    ownsPool: boolean,
    schema: string,
    private method: 'unnest' | 'copy',
  ) {
    this.pool = pool;
    this.ownsPool = ownsPool;
    this.schema = schema;
    this.t = `"${schema}".events`;
    this.chain = new ArchiveChain(pool, schema);
  }

  /** The signed checkpoints of the runs' chains (migration 4). */
  get checkpoints(): ChainCheckpoints {
    return this.chain.checkpoints;
  }

  /**
   * Connect and run pending migrations. Throws {@link EventStoreConfigError} for a bad `schema`
   * or when neither `connectionString` nor `pool` is given; pg errors when the server is unreachable.
   */
  static async connect(opts: EventStoreOptions): Promise<EventStore> {
    const schema = opts.schema ?? 'rstar';
    if (!SCHEMA_RE.test(schema)) {
      throw new EventStoreConfigError(`"schema" must match ${SCHEMA_RE} (lowercase identifier), got "${schema}"`, 'schema');
    }
    if (!opts.pool && !opts.connectionString) {
      throw new EventStoreConfigError('pass "connectionString" (postgres://...) or "pool"', 'connectionString');
    }
    const method = opts.appendMethod ?? 'auto';
    if (method !== 'auto' && method !== 'unnest' && method !== 'copy') {
      throw new EventStoreConfigError(`"appendMethod" must be "auto", "unnest" or "copy", got "${method}"`, 'appendMethod');
    }
    const cfg: PoolConfig = { connectionString: opts.connectionString, max: opts.maxConnections ?? 4 };
    const pool = opts.pool ?? new Pool(cfg);
    // An idle client whose server went away (a Postgres restart) emits 'error' on the pool; without a
    // listener that would end the process. The pool drops that client and the next query reconnects.
    if (!opts.pool) pool.on('error', () => undefined);
    const store = new EventStore(pool, !opts.pool, schema, method === 'copy' ? 'copy' : 'unnest');
    try {
      if (opts.migrate === false) await store.checkMigrated();
      else await store.migrate();
      if (method === 'auto') {
        const v = (await pool.query('SELECT version() AS v')).rows[0].v as string;
        store.method = /pglite/i.test(v) ? 'unnest' : 'copy';
      }
    } catch (e) {
      if (!opts.pool) await pool.end();
      throw e;
    }
    return store;
  }

  /** The append path in use (`'auto'` resolved at connect). */
  get appendMethod(): 'unnest' | 'copy' {
    return this.method;
  }

  /**
   * Check that the archive is at {@link LATEST_MIGRATION} (a role that may not migrate).
   * @throws EventStoreConfigError naming the fix when it is behind or missing.
   */
  checkMigrated(): Promise<void> {
    return checkArchiveMigrated(this.pool, this.schema);
  }

  /** Apply pending migrations (see {@link migrateArchive}). */
  migrate(): Promise<void> {
    return migrateArchive(this.pool, this.schema);
  }

  /**
   * Append a batch atomically. Events whose id is already stored (or repeated in the batch) are
   * dropped; the others get the next positions of their streams, in batch order, and their chain hashes
   * (hash-chain.ts), planned under the streams' advisory locks ({@link planAppend}). With
   * `appendMethod: 'copy'` the rows go in by COPY (see {@link copyAppend}); a unique violation there
   * retries the batch once with `unnest`, whose `ON CONFLICT (id) DO NOTHING` settles it.
   */
  async appendBatch(all: readonly RstarEvent[]): Promise<AppendResult> {
    if (all.length === 0) return { appended: 0, duplicates: 0, quarantined: 0, collisions: [] };
    // Dead letters are not events of the run they name: they go to the quarantine, never into its chain.
    const dead = all.filter((e): e is RstarEvent<'DeadLettered'> => e.type === 'DeadLettered');
    const events = dead.length ? all.filter((e) => e.type !== 'DeadLettered') : all;
    const rows: AppendRow[] = events.map((e) => {
      const data = withoutNul(e.data, JSON.stringify(e.data));
      const meta = withoutNul(e.meta, JSON.stringify(e.meta));
      return { id: e.id, type: e.type, version: e.version, runId: e.runId, streamId: e.streamId, data: data.json, meta: meta.json, dataValue: data.value, metaValue: meta.value };
    });
    let collisions: Collision[] = [];
    let quarantined = 0;
    const write = async (c: PoolClient, streams: string[], method: 'copy' | 'unnest') => {
      const plan = await planAppend(c, this.t, rows, streams);
      collisions = plan.collisions;
      quarantined = await writeQuarantine(c, this.schema, dead, collisions);
      return method === 'copy' ? copyAppend(c, this.t, plan.rows) : this.unnestAppend(c, plan.rows);
    };
    let appended: number;
    if (this.method === 'copy') {
      try {
        appended = await this.inTransaction(rows, (c, streams) => write(c, streams, 'copy'));
      } catch (e) {
        if ((e as { code?: string }).code !== '23505') throw e;
        appended = await this.inTransaction(rows, (c, streams) => write(c, streams, 'unnest'));
      }
    } else {
      appended = await this.inTransaction(rows, (c, streams) => write(c, streams, 'unnest'));
    }
    return {
      appended,
      duplicates: events.length - appended - collisions.length,
      quarantined,
      collisions: collisions.map((x) => ({ id: x.row.id, reason: x.reason })),
    };
  }

  /** The quarantine (dead letters and id collisions) of one run, oldest first. */
  quarantined(runId: string): Promise<QuarantinedEvent[]> {
    return readQuarantine(this.pool, this.schema, runId);
  }

  /** The id collisions recorded against one run (its own, or on one of its events' ids), oldest first. */
  idCollisions(runId: string): Promise<QuarantinedEvent[]> {
    return readIdCollisions(this.pool, this.schema, runId);
  }

  /** Run `write` in a transaction holding the advisory lock of every stream of `rows`. */
  private async inTransaction(rows: readonly AppendRow[], write: (c: PoolClient, streams: string[]) => Promise<number>): Promise<number> {
    const streams = [...new Set(rows.map((r) => r.streamId))];
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      // Sorted lock order: two batches touching the same streams never deadlock.
      await c.query('SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtext(s) AS h FROM unnest($1::text[]) s) x ORDER BY h', [
        streams,
      ]);
      const n = await write(c, streams);
      await c.query('COMMIT');
      return n;
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      c.release();
    }
  }

  private async unnestAppend(c: PoolClient, rows: readonly PlannedRow[]): Promise<number> {
    if (!rows.length) return 0;
    const res = await c.query(
      `INSERT INTO ${this.t} (id, type, version, run_id, stream_id, stream_position, data, meta, hash)
       SELECT id, type, version, run_id, stream_id, pos, data::jsonb, meta::jsonb, decode(hash, 'hex')
       FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[])
         WITH ORDINALITY AS t(id, type, version, run_id, stream_id, pos, data, meta, hash, ord)
       ORDER BY ord
       ON CONFLICT (id) DO NOTHING`,
      [
        rows.map((r) => r.id),
        rows.map((r) => r.type),
        rows.map((r) => r.version),
        rows.map((r) => r.runId),
        rows.map((r) => r.streamId),
        rows.map((r) => r.streamPosition),
        rows.map((r) => r.data),
        rows.map((r) => r.meta),
        rows.map((r) => r.hash.toString('hex')),
      ],
    );
    return res.rowCount ?? 0;
  }

  /** The run's hash chain (see {@link ArchiveChain.verify}). */
  verifyChain(runId: string, opts: { pageSize?: number; onRow?: (row: ChainRow) => void } = {}): Promise<ChainReport> {
    return this.chain.verify(runId, opts);
  }

  /**
   * Read the global log after `after`, in (transaction id, global position) order, only below the
   * oldest transaction still in flight (`pg_snapshot_xmin(pg_current_snapshot())`), so a transaction
   * that commits late is read on a later page instead of being skipped.
   */
  async readAll(opts: { after?: LogPosition; limit?: number } = {}): Promise<EventPage> {
    return this.page('', [], opts.after ?? START, opts.limit);
  }

  /** Events of one run, paged like {@link readAll}; `types` filters by event type. */
  async readRun(
    runId: string,
    opts: { after?: LogPosition; limit?: number; types?: readonly EventType[] } = {},
  ): Promise<EventPage> {
    const params: unknown[] = [runId];
    let where = 'run_id = $1';
    if (opts.types?.length) {
      params.push(opts.types);
      where += ` AND type = ANY($2::text[])`;
    }
    return this.page(where, params, opts.after ?? START, opts.limit);
  }

  /**
   * Every committed event of one run as of now (optionally only `types`), in (transaction id, global
   * position) order, in one query. Unlike {@link readRun} it is not held back by transactions in flight
   * anywhere in the cluster: that horizon is for following the log with a cursor, and stopping at an
   * empty page of it would read a truncated history while any other transaction is open. For a reader
   * that needs the whole history (a resume, a replay, a restart of the resampler).
   */
  async readRunSnapshot(runId: string, opts: { types?: readonly EventType[] } = {}): Promise<StoredEvent[]> {
    const params: unknown[] = [runId];
    let where = 'run_id = $1';
    if (opts.types?.length) {
      params.push(opts.types);
      where += ' AND type = ANY($2::text[])';
    }
    const r = await this.pool.query(`SELECT *, transaction_id::text AS txid FROM ${this.t} WHERE ${where} ORDER BY transaction_id, global_position`, params);
    return r.rows.map(toStored);
  }

  /** Every committed event of the archive as of now, in log order, in one query (see {@link readRunSnapshot}). */
  async readAllSnapshot(): Promise<StoredEvent[]> {
    const r = await this.pool.query(`SELECT *, transaction_id::text AS txid FROM ${this.t} ORDER BY transaction_id, global_position`);
    return r.rows.map(toStored);
  }

  /** Events of one stream in stream order (gap-free positions), after `afterPosition` (default 0). */
  async readStream(streamId: string, opts: { afterPosition?: number; limit?: number } = {}): Promise<StoredEvent[]> {
    const limit = checkLimit(opts.limit);
    const r = await this.pool.query(
      `SELECT *, transaction_id::text AS txid FROM ${this.t} WHERE stream_id = $1 AND stream_position > $2 ORDER BY stream_position LIMIT $3`,
      [streamId, opts.afterPosition ?? 0, limit],
    );
    return r.rows.map(toStored);
  }

  /**
   * Why this connection's role is more than a service should hold, or null: a superuser, a member of the
   * role that owns the events table (it may disable the append-only triggers and set the migration
   * flag), or one granted UPDATE, DELETE or TRUNCATE on events. In secured mode a service refuses such a
   * role (`StoreConnection`): only migrations run as the owner.
   */
  async privilegeProblem(): Promise<string | null> {
    const r = await this.pool.query(
      `SELECT current_user AS who, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS super,
              pg_has_role(current_user, c.relowner, 'MEMBER') AS owner,
              has_table_privilege(current_user, c.oid, 'UPDATE') OR has_table_privilege(current_user, c.oid, 'DELETE') OR has_table_privilege(current_user, c.oid, 'TRUNCATE') AS rewrite
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'events'`,
      [this.schema],
    );
    const x = r.rows[0];
    if (!x) return null;
    if (x.super) return `it connects as "${x.who}", a superuser`;
    if (x.owner) return `it connects as "${x.who}", the owner of ${this.t} (who may disable its append-only triggers)`;
    if (x.rewrite) return `it connects as "${x.who}", which may UPDATE, DELETE or TRUNCATE ${this.t}`;
    return null;
  }

  /** One round trip to the server (readiness probes). @throws the driver's error when Postgres does not answer. */
  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  /** Event counts by type for one run. */
  async countByType(runId: string): Promise<Record<string, number>> {
    const r = await this.pool.query(`SELECT type, count(*)::int AS n FROM ${this.t} WHERE run_id = $1 GROUP BY type ORDER BY type`, [runId]);
    return Object.fromEntries(r.rows.map((x) => [x.type, Number(x.n)]));
  }

  /** Total number of archived events (optionally of one run). */
  async count(runId?: string): Promise<number> {
    const r = runId
      ? await this.pool.query(`SELECT count(*)::bigint AS n FROM ${this.t} WHERE run_id = $1`, [runId])
      : await this.pool.query(`SELECT count(*)::bigint AS n FROM ${this.t}`);
    return Number(r.rows[0].n);
  }

  /** Every run with its event count, first/last archive time and status, newest first. */
  async listRuns(opts: { limit?: number } = {}): Promise<RunSummary[]> {
    const r = await this.pool.query(
      `SELECT run_id, count(*)::bigint AS n, min(recorded_at) AS first_at, max(recorded_at) AS last_at,
              bool_or(type = 'RunCompleted') AS completed, bool_or(type = 'RunFailed') AS failed
       FROM ${this.t} GROUP BY run_id ORDER BY max(global_position) DESC LIMIT $1`,
      [checkLimit(opts.limit, 1000)],
    );
    return r.rows.map((x) => ({
      runId: x.run_id,
      events: Number(x.n),
      firstAt: new Date(x.first_at).toISOString(),
      lastAt: new Date(x.last_at).toISOString(),
      status: x.completed ? 'completed' : x.failed ? 'failed' : 'running',
    }));
  }

  /** A pooled client, for callers that need raw SQL against the same database (projections, benchmarks). */
  connectClient(): Promise<PoolClient> {
    return this.pool.connect();
  }

  /** Close the pool when the store created it. */
  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  private async page(where: string, params: unknown[], after: LogPosition, limit?: number): Promise<EventPage> {
    const n = params.length;
    const r = await this.pool.query(
      `SELECT *, transaction_id::text AS txid FROM ${this.t}
       WHERE ${where ? where + ' AND ' : ''}(transaction_id, global_position) > ($${n + 1}::xid8, $${n + 2}::bigint)
         AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY transaction_id, global_position LIMIT $${n + 3}`,
      [...params, after.txid, after.position, checkLimit(limit)],
    );
    const events = r.rows.map(toStored);
    const tail = events[events.length - 1];
    return { events, last: tail ? { txid: tail.txid, position: tail.globalPosition } : after };
  }
}

function checkLimit(limit: number | undefined, dflt = 1000): number {
  const l = limit ?? dflt;
  if (!Number.isInteger(l) || l < 1 || l > 100_000) {
    throw new EventStoreConfigError(`"limit" must be an integer in 1..100000, got ${limit}`, 'limit');
  }
  return l;
}

function toStored(row: any): StoredEvent {
  let e: RstarEvent;
  try {
    e = parseEvent({
      id: row.id,
      type: row.type,
      version: row.version,
      runId: row.run_id,
      streamId: row.stream_id,
      data: row.data,
      meta: row.meta,
    });
  } catch (err) {
    throw new CorruptEventError(`archived event ${row.id} at ${row.global_position} does not parse: ${(err as Error).message}`, Number(row.global_position));
  }
  return {
    ...e,
    globalPosition: Number(row.global_position),
    streamPosition: Number(row.stream_position),
    txid: String(row.txid),
    archivedAt: new Date(row.recorded_at).toISOString(),
  } as StoredEvent;
}
