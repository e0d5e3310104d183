import type { PoolClient } from 'pg';
import { chainHash } from './hash-chain';

/** One row of the archive as the append paths take it: data and meta as JSON text and as the objects they came from. */
export interface AppendRow {
  id: string;
  type: string;
  version: number;
  runId: string;
  streamId: string;
  data: string;
  meta: string;
  /** The objects `data` and `meta` serialize (hashed without parsing the text again). */
  dataValue: unknown;
  metaValue: unknown;
}

/** A row to write: its stream position and chain hash assigned. */
export interface PlannedRow extends AppendRow {
  streamPosition: number;
  hash: Buffer;
}

/**
 * Plan an append inside the caller's transaction, after it took the per-stream advisory locks: under
 * those locks the ids already stored and each stream's head (position and hash) cannot change, so the
 * rows not yet stored (first copy of a repeated id) get the next positions of their streams in batch order
 * and their chain hashes ({@link chainHash}: each over its content and its predecessor's hash). A row
 * whose id is stored (or earlier in the batch) is dropped when it is the same event, and reported as a
 * {@link Collision} when its content differs.
 */
export async function planAppend(c: PoolClient, table: string, rows: readonly AppendRow[], streams: readonly string[]): Promise<AppendPlan> {
  const known = await c.query(
    `SELECT id, NULL::text AS stream_id, NULL::bigint AS pos, NULL::bytea AS hash FROM ${table} WHERE id = ANY($1::text[])
     UNION ALL
     SELECT NULL, s.stream_id, h.stream_position, h.hash FROM unnest($2::text[]) AS s(stream_id)
       CROSS JOIN LATERAL (SELECT e.stream_position, e.hash FROM ${table} e WHERE e.stream_id = s.stream_id ORDER BY e.stream_position DESC LIMIT 1) h`,
    [rows.map((r) => r.id), streams],
  );
  const stored = new Set<string>();
  const head = new Map<string, { pos: number; hash: Buffer | null }>();
  for (const r of known.rows) {
    if (r.id !== null) stored.add(r.id);
    else head.set(r.stream_id, { pos: Number(r.pos), hash: r.hash });
  }
  const out: PlannedRow[] = [];
  const first = new Map<string, AppendRow>();
  const again: AppendRow[] = [];
  const collisions: Collision[] = [];
  for (const r of rows) {
    if (stored.has(r.id)) {
      again.push(r);
      continue;
    }
    const earlier = first.get(r.id);
    if (earlier) {
      if (!sameContent(earlier, r)) collisions.push({ row: r, reason: `id_collision: ${r.id} appears twice in one batch with different content` });
      continue;
    }
    first.set(r.id, r);
    const h = head.get(r.streamId) ?? { pos: 0, hash: null };
    const streamPosition = h.pos + 1;
    const hash = chainHash(h.hash, { id: r.id, type: r.type, version: r.version, runId: r.runId, streamId: r.streamId, streamPosition, data: r.dataValue, meta: r.metaValue });
    head.set(r.streamId, { pos: streamPosition, hash });
    out.push({ ...r, streamPosition, hash });
  }
  if (again.length) collisions.push(...(await storedCollisions(c, table, again)));
  return { rows: out, collisions };
}

/** An event whose id is taken by different content: an alarm, never a silent drop (issue 27). */
export interface Collision {
  row: AppendRow;
  reason: string;
}

/** The rows planned, and the id collisions found. */
export interface AppendPlan {
  rows: PlannedRow[];
  collisions: Collision[];
}

/** Same event: type, run, stream and data (meta may differ between honest copies: trace context, signature chunk). */
function sameContent(a: AppendRow, b: AppendRow): boolean {
  return a.type === b.type && a.runId === b.runId && a.streamId === b.streamId && a.data === b.data;
}

/**
 * Which of `rows`, whose ids are already stored, differ from the stored event (type, run, stream or
 * data; data compared as jsonb). Only run when a batch repeats stored ids (a redelivery after a crash, a
 * resumed run): an honest copy is the same event and is dropped as before.
 */
async function storedCollisions(c: PoolClient, table: string, rows: readonly AppendRow[]): Promise<Collision[]> {
  const r = await c.query(
    `SELECT n.ord, e.type, e.run_id, e.stream_id FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS n(id, type, run_id, stream_id, data, ord)
       JOIN ${table} e ON e.id = n.id
      WHERE e.type <> n.type OR e.run_id <> n.run_id OR e.stream_id <> n.stream_id OR e.data <> n.data::jsonb`,
    [rows.map((x) => x.id), rows.map((x) => x.type), rows.map((x) => x.runId), rows.map((x) => x.streamId), rows.map((x) => x.data)],
  );
  return r.rows.map((x) => {
    const row = rows[Number(x.ord) - 1];
    const what = x.type !== row.type ? `type ${x.type}, this one ${row.type}` : x.run_id !== row.runId ? `run ${x.run_id}, this one ${row.runId}` : x.stream_id !== row.streamId ? `stream ${x.stream_id}, this one ${row.streamId}` : 'other data';
    return { row, reason: `id_collision: ${row.id} is already archived with different content (stored: ${what})` };
  });
}
