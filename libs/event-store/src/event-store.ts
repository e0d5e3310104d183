import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { parseEvent, type EventType, type RstarEvent } from '@rstar/contracts';
import { CorruptEventError, EventStoreConfigError } from './errors';
import { MIGRATIONS } from './migrations';
import { copyAppend, type AppendRow } from './copy-append';
import { START, type LogPosition } from './position';

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
}

export interface AppendResult {
  /** Events newly stored. */
  appended: number;
  /** Events dropped because their id was already stored (or repeated in the batch). */
  duplicates: number;
}

const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The append-only event archive on Postgres (ARCHITECTURE §4), also on PGlite through the embedded wire-protocol server (startEmbeddedPostgres).
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
      await store.migrate();
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

  /** Apply pending migrations under a session advisory lock (safe when several processes boot at once). */
  async migrate(): Promise<void> {
    const c = await this.pool.connect();
    try {
      await c.query('SELECT pg_advisory_lock(hashtext($1))', [`rstar-migrate:${this.schema}`]);
      await c.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`);
      await c.query(
        `CREATE TABLE IF NOT EXISTS "${this.schema}".schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const done = new Set(
        (await c.query(`SELECT version FROM "${this.schema}".schema_migrations`)).rows.map((r) => Number(r.version)),
      );
      for (const m of MIGRATIONS) {
        if (done.has(m.version)) continue;
        await c.query('BEGIN');
        try {
          await c.query(m.sql.replaceAll('{{schema}}', `"${this.schema}"`));
          await c.query(`INSERT INTO "${this.schema}".schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
          await c.query('COMMIT');
        } catch (e) {
          await c.query('ROLLBACK');
          throw e;
        }
      }
    } finally {
      await c.query('SELECT pg_advisory_unlock(hashtext($1))', [`rstar-migrate:${this.schema}`]).catch(() => undefined);
      c.release();
    }
  }

  /**
   * Append a batch atomically. Events whose id is already stored (or repeated in the batch) are
   * dropped; the others get the next positions of their streams, in batch order. With
   * `appendMethod: 'copy'` the rows go in by COPY (see {@link copyAppend}); a unique violation there
   * retries the batch once with `unnest`, whose `ON CONFLICT (id) DO NOTHING` settles it.
   */
  async appendBatch(events: readonly RstarEvent[]): Promise<AppendResult> {
    if (events.length === 0) return { appended: 0, duplicates: 0 };
    const rows: AppendRow[] = events.map((e) => ({
      id: e.id,
      type: e.type,
      version: e.version,
      runId: e.runId,
      streamId: e.streamId,
      data: JSON.stringify(e.data),
      meta: JSON.stringify(e.meta),
    }));
    let appended: number;
    if (this.method === 'copy') {
      try {
        appended = await this.inTransaction(rows, (c, streams) => copyAppend(c, this.t, rows, streams));
      } catch (e) {
        if ((e as { code?: string }).code !== '23505') throw e;
        appended = await this.inTransaction(rows, (c, streams) => this.unnestAppend(c, rows, streams));
      }
    } else {
      appended = await this.inTransaction(rows, (c, streams) => this.unnestAppend(c, rows, streams));
    }
    return { appended, duplicates: events.length - appended };
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

  private async unnestAppend(c: PoolClient, rows: readonly AppendRow[], _streams: readonly string[]): Promise<number> {
    const res = await c.query(
      `WITH input AS (
         SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[])
           WITH ORDINALITY AS t(id, type, version, run_id, stream_id, data, meta, ord)
       ), fresh AS (
         SELECT DISTINCT ON (i.id) i.* FROM input i
         WHERE NOT EXISTS (SELECT 1 FROM ${this.t} e WHERE e.id = i.id)
         ORDER BY i.id, i.ord
       ), numbered AS (
         SELECT f.*, COALESCE(h.pos, 0) + row_number() OVER (PARTITION BY f.stream_id ORDER BY f.ord) AS stream_position
         FROM fresh f
         LEFT JOIN LATERAL (SELECT max(e.stream_position) AS pos FROM ${this.t} e WHERE e.stream_id = f.stream_id) h ON true
       )
       INSERT INTO ${this.t} (id, type, version, run_id, stream_id, stream_position, data, meta)
       SELECT id, type, version, run_id, stream_id, stream_position, data::jsonb, meta::jsonb FROM numbered ORDER BY ord
       ON CONFLICT (id) DO NOTHING`,
      [
        rows.map((r) => r.id),
        rows.map((r) => r.type),
        rows.map((r) => r.version),
        rows.map((r) => r.runId),
        rows.map((r) => r.streamId),
        rows.map((r) => r.data),
        rows.map((r) => r.meta),
      ],
    );
    return res.rowCount ?? 0;
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

  /** Events of one stream in stream order (gap-free positions), after `afterPosition` (default 0). */
  async readStream(streamId: string, opts: { afterPosition?: number; limit?: number } = {}): Promise<StoredEvent[]> {
    const limit = checkLimit(opts.limit);
    const r = await this.pool.query(
      `SELECT *, transaction_id::text AS txid FROM ${this.t} WHERE stream_id = $1 AND stream_position > $2 ORDER BY stream_position LIMIT $3`,
      [streamId, opts.afterPosition ?? 0, limit],
    );
    return r.rows.map(toStored);
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
