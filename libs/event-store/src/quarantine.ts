import type { Pool, PoolClient } from 'pg';
import type { RstarEvent } from '@rstar/contracts';
import type { Collision } from './append.plan';

/** A row of the quarantine: a dead letter (a consumer refused or could not handle a message) or an id collision. */
export interface QuarantinedEvent {
  eventId: string;
  kind: 'dead_letter' | 'id_collision';
  subject: string | null;
  /** The consumer that refused it (dead letters). */
  consumer: string | null;
  /** The field the reason is about (`type`, `meta.signature`, `id`, a data field). */
  field: string | null;
  reason: string;
  /** The refused message as received (up to 64 KiB for a dead letter). */
  payload: string;
}

/**
 * Record dead letters and id collisions in the quarantine table (migration 3), inside the caller's append
 * transaction; a row already recorded (a redelivery) is kept once. Returns the dead letters newly recorded.
 */
export async function writeQuarantine(c: PoolClient, schema: string, dead: readonly RstarEvent<'DeadLettered'>[], collisions: readonly Collision[]): Promise<number> {
  const rows = [
    ...dead.map((d) => ({ id: d.id, kind: 'dead_letter', runId: d.runId, subject: d.data.subject, consumer: d.data.consumer, field: d.data.field, reason: d.data.reason, payload: d.data.payload })),
    ...collisions.map((x) => ({ id: x.row.id, kind: 'id_collision', runId: x.row.runId, subject: null, consumer: null, field: 'id', reason: x.reason, payload: `{"type":${JSON.stringify(x.row.type)},"data":${x.row.data},"meta":${x.row.meta}}` })),
  ];
  if (!rows.length) return 0;
  const r = await c.query(
    `INSERT INTO "${schema}".quarantine (event_id, kind, run_id, subject, consumer, field, reason, payload)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
     ON CONFLICT (event_id, kind) DO NOTHING RETURNING kind`,
    // Text columns cannot hold U+0000 (a payload may be anything a producer sent).
    [rows.map((x) => x.id), rows.map((x) => x.kind), rows.map((x) => x.runId), rows.map((x) => x.subject), rows.map((x) => x.consumer), rows.map((x) => x.field), rows.map((x) => x.reason), rows.map((x) => x.payload)].map((col) =>
      col.map((v) => (typeof v === 'string' ? v.replaceAll('\u0000', '\uFFFD') : v)),
    ),
  );
  return r.rows.filter((x) => x.kind === 'dead_letter').length;
}

/** The quarantine (dead letters and id collisions) of one run, oldest first. */
export async function readQuarantine(pool: Pool, schema: string, runId: string): Promise<QuarantinedEvent[]> {
  const r = await pool.query(`SELECT event_id, kind, subject, consumer, field, reason, payload FROM "${schema}".quarantine WHERE run_id = $1 ORDER BY seq`, [runId]);
  return r.rows.map((x) => ({ eventId: x.event_id, kind: x.kind, subject: x.subject, consumer: x.consumer, field: x.field, reason: x.reason, payload: x.payload }));
}

/**
 * Every id collision recorded against one run: the quarantined copy names the run (`run_id`), or its id is
 * one of the run's archived events (a copy published under another run id, squatting or squatted by this
 * run's event). Oldest first. `rstar replay verify` reports each as an alarm.
 */
export async function readIdCollisions(pool: Pool, schema: string, runId: string): Promise<QuarantinedEvent[]> {
  const r = await pool.query(
    `SELECT q.event_id, q.kind, q.subject, q.consumer, q.field, q.reason, q.payload FROM "${schema}".quarantine q
      WHERE q.kind = 'id_collision'
        AND (q.run_id = $1 OR EXISTS (SELECT 1 FROM "${schema}".events e WHERE e.id = q.event_id AND e.run_id = $1))
      ORDER BY q.seq`,
    [runId],
  );
  return r.rows.map((x) => ({ eventId: x.event_id, kind: x.kind, subject: x.subject, consumer: x.consumer, field: x.field, reason: x.reason, payload: x.payload }));
}
