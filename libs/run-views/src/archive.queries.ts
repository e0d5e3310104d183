import { parseEvent, streams, type EventType, type RstarEvent } from '@rstar/contracts';
import { START, type EventStore, type LogPosition } from '@rstar/event-store';

/** An archived event with its place in the log. */
export type ArchivedEvent = RstarEvent & { position: LogPosition };

/** A run's first facts, read with one index lookup per run. */
export interface RunHeadRow {
  runId: string;
  started: RstarEvent<'RunStarted'> | null;
  finished: RstarEvent<'RunCompleted'> | RstarEvent<'RunFailed'> | null;
  lastStarted: RstarEvent<'StepStarted'> | null;
  lastCompleted: RstarEvent<'StepCompleted'> | null;
  stepsCompleted: number;
  /** Global position of the run's first event (runs without RunStarted sort by it). */
  firstPosition: number;
}

const COLS = 'id, type, version, run_id, stream_id, data, meta, transaction_id::text AS txid, global_position';

/**
 * The SQL the event-store reader runs against the archive's `events` table (libs/event-store's schema),
 * read-only, each query on an index: `(run_id, type)` for a run's events of some types, `id` for events
 * by deterministic id, `(stream_id, stream_position)` for one aggregate, `(run_id, transaction_id,
 * global_position)` for the live tail. Rows are parsed (and upcast) with `parseEvent`.
 */
export class ArchiveQueries {
  /** The quoted events table (`"<schema>".events`). */
  readonly table: string;
  private readonly t: string;

  constructor(private readonly store: EventStore) {
    this.t = this.table = `"${store.schema}".events`;
  }

  /** Run a query on a pooled client. */
  async sql<R = any>(text: string, params: unknown[] = []): Promise<R[]> {
    const c = await this.store.connectClient();
    try {
      return (await c.query(text, params)).rows as R[];
    } finally {
      c.release();
    }
  }

  /** Every run id, distinct, by a loose index scan over `(run_id, ...)` (no full scan of the events). */
  async runIds(): Promise<string[]> {
    const rows = await this.sql<{ run_id: string }>(
      `WITH RECURSIVE r AS (
         (SELECT run_id FROM ${this.t} ORDER BY run_id LIMIT 1)
         UNION ALL
         SELECT (SELECT e.run_id FROM ${this.t} e WHERE e.run_id > r.run_id ORDER BY e.run_id LIMIT 1) FROM r WHERE r.run_id IS NOT NULL
       ) SELECT run_id FROM r WHERE run_id IS NOT NULL`,
    );
    return rows.map((r) => r.run_id);
  }

  /** The head facts of each run in `runIds`. */
  async runHeads(runIds: readonly string[]): Promise<RunHeadRow[]> {
    if (runIds.length === 0) return [];
    const one = (type: string, order = 'global_position DESC') =>
      `(SELECT row_to_json(x) FROM (SELECT ${COLS} FROM ${this.t} WHERE run_id = r.run_id AND type = ${type} ORDER BY ${order} LIMIT 1) x)`;
    const rows = await this.sql(
      `SELECT r.run_id,
         ${one(`'RunStarted'`, 'global_position')} AS started,
         (SELECT row_to_json(x) FROM (SELECT ${COLS} FROM ${this.t} WHERE run_id = r.run_id AND type IN ('RunCompleted', 'RunFailed') ORDER BY global_position DESC LIMIT 1) x) AS finished,
         ${one(`'StepStarted'`, `(data->>'step')::int DESC`)} AS last_started,
         ${one(`'StepCompleted'`, `(data->>'step')::int DESC`)} AS last_completed,
         (SELECT count(*) FROM ${this.t} WHERE run_id = r.run_id AND type = 'StepCompleted')::int AS steps_completed,
         (SELECT global_position FROM ${this.t} WHERE run_id = r.run_id ORDER BY run_id, transaction_id, global_position LIMIT 1) AS first_position
       FROM unnest($1::text[]) AS r(run_id)`,
      [runIds],
    );
    return rows.map((r) => ({
      runId: r.run_id,
      started: r.started ? (toEvent(r.started) as RstarEvent<'RunStarted'>) : null,
      finished: r.finished ? (toEvent(r.finished) as RstarEvent<'RunCompleted'> | RstarEvent<'RunFailed'>) : null,
      lastStarted: r.last_started ? (toEvent(r.last_started) as RstarEvent<'StepStarted'>) : null,
      lastCompleted: r.last_completed ? (toEvent(r.last_completed) as RstarEvent<'StepCompleted'>) : null,
      stepsCompleted: Number(r.steps_completed),
      firstPosition: Number(r.first_position ?? 0),
    }));
  }

  /** A run's events of `types`, in archive order. */
  async ofTypes(runId: string, types: readonly EventType[]): Promise<ArchivedEvent[]> {
    const rows = await this.sql(`SELECT ${COLS} FROM ${this.t} WHERE run_id = $1 AND type = ANY($2::text[]) ORDER BY global_position`, [runId, types]);
    return rows.map(toEvent);
  }

  /** A run's events of `types` whose `data.step` is `step`, in archive order (small event types only: it reads each row). */
  async ofTypesAtStep(runId: string, types: readonly EventType[], step: number): Promise<ArchivedEvent[]> {
    const rows = await this.sql(
      `SELECT ${COLS} FROM ${this.t} WHERE run_id = $1 AND type = ANY($2::text[]) AND data->>'step' = $3 ORDER BY global_position`,
      [runId, types, String(step)],
    );
    return rows.map(toEvent);
  }

  /** Events by id (deterministic ids: `<Type>:<key>`), those of `runId` only, in archive order. */
  async byIds(runId: string, ids: readonly string[]): Promise<ArchivedEvent[]> {
    if (ids.length === 0) return [];
    const rows = await this.sql(`SELECT ${COLS} FROM ${this.t} WHERE id = ANY($1::text[]) AND run_id = $2 ORDER BY global_position`, [ids, runId]);
    return rows.map(toEvent);
  }

  /** Every event of the aggregates `streamIds` of `runId`, in archive order. */
  async ofStreams(runId: string, streamIds: readonly string[], types?: readonly EventType[]): Promise<ArchivedEvent[]> {
    const rows = await this.sql(
      `SELECT ${COLS} FROM ${this.t} WHERE stream_id = ANY($1::text[]) AND run_id = $2 ${types ? 'AND type = ANY($3::text[])' : ''} ORDER BY global_position`,
      types ? [streamIds, runId, types] : [streamIds, runId],
    );
    return rows.map(toEvent);
  }

  /**
   * The policy versions of each turn of the rollouts `rolloutIds` of `runId` (`TurnGenerated.policyVersion`
   * and its segments' versions), keyed by rollout id, in turn order. Only those two fields leave the
   * database: the turns' tokens stay there. One query on `(stream_id, ...)`.
   */
  async turnVersions(runId: string, rolloutIds: readonly string[]): Promise<Map<string, Array<{ policyVersion: number | null; segments: Array<{ policyVersion: number }> | null }>>> {
    const out = new Map<string, Array<{ policyVersion: number | null; segments: Array<{ policyVersion: number }> | null }>>();
    if (rolloutIds.length === 0) return out;
    const rows = await this.sql(
      `SELECT data->>'rolloutId' AS rollout_id, (data->>'policyVersion')::int AS version, jsonb_path_query_array(data, '$.segments[*].policyVersion') AS segments
       FROM ${this.t} WHERE stream_id = ANY($1::text[]) AND run_id = $2 AND type = 'TurnGenerated' ORDER BY (data->>'turn')::int`,
      [rolloutIds.map((r) => streams.rollout(r)), runId],
    );
    for (const r of rows) {
      const turns = out.get(r.rollout_id) ?? [];
      const segs = (r.segments as number[]).map((v) => ({ policyVersion: Number(v) }));
      turns.push({ policyVersion: r.version === null ? null : Number(r.version), segments: segs.length ? segs : null });
      out.set(r.rollout_id, turns);
    }
    return out;
  }

  /** How many events of `type` the run has. */
  async countOf(runId: string, type: EventType): Promise<number> {
    const [r] = await this.sql(`SELECT count(*)::bigint AS n FROM ${this.t} WHERE run_id = $1 AND type = $2`, [runId, type]);
    return Number(r.n);
  }

  /**
   * The position of the run's latest event that no later reader can be missing: below the oldest
   * transaction still in flight, so an event of a transaction committing late comes after it.
   */
  async head(runId: string): Promise<LogPosition> {
    const [r] = await this.sql(
      `SELECT transaction_id::text AS txid, global_position FROM ${this.t}
       WHERE run_id = $1 AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY run_id DESC, transaction_id DESC, global_position DESC LIMIT 1`,
      [runId],
    );
    return r ? { txid: r.txid, position: Number(r.global_position) } : START;
  }

  /** The run's events of `types` after `after` up to and including `upTo`, in log order. */
  async between(runId: string, types: readonly EventType[], after: LogPosition, upTo: LogPosition, limit: number): Promise<ArchivedEvent[]> {
    const rows = await this.sql(
      `SELECT ${COLS} FROM ${this.t}
       WHERE run_id = $1 AND (transaction_id, global_position) > ($2::xid8, $3::bigint) AND (transaction_id, global_position) <= ($4::xid8, $5::bigint)
         AND type = ANY($6::text[])
       ORDER BY transaction_id, global_position LIMIT $7`,
      [runId, after.txid, after.position, upTo.txid, upTo.position, types, limit],
    );
    return rows.map(toEvent);
  }
}

/** A row (or its `row_to_json`) as a parsed event with its log position. */
function toEvent(row: any): ArchivedEvent {
  const e = parseEvent({ id: row.id, type: row.type, version: row.version, runId: row.run_id, streamId: row.stream_id, data: row.data, meta: row.meta });
  return Object.assign(e, { position: { txid: String(row.txid), position: Number(row.global_position) } });
}
