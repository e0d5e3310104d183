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
 * and their chain hashes ({@link chainHash}: each over its content and its predecessor's hash).
 */
export async function planAppend(c: PoolClient, table: string, rows: readonly AppendRow[], streams: readonly string[]): Promise<PlannedRow[]> {
  const known = await c.query(
    `SELECT id, NULL::text AS stream_id, NULL::bigint AS pos, NULL::bytea AS hash FROM ${table} WHERE id = ANY($1::text[])
     UNION ALL
     SELECT NULL, s.stream_id, h.stream_position, h.hash FROM unnest($2::text[]) AS s(stream_id)
       CROSS JOIN LATERAL (SELECT e.stream_position, e.hash FROM ${table} e WHERE e.stream_id = s.stream_id ORDER BY e.stream_position DESC LIMIT 1) h`,
    [rows.map((r) => r.id), streams],
  );
  const seen = new Set<string>();
  const head = new Map<string, { pos: number; hash: Buffer | null }>();
  for (const r of known.rows) {
    if (r.id !== null) seen.add(r.id);
    else head.set(r.stream_id, { pos: Number(r.pos), hash: r.hash });
  }
  const out: PlannedRow[] = [];
  for (const r of rows) {
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    const h = head.get(r.streamId) ?? { pos: 0, hash: null };
    const streamPosition = h.pos + 1;
    const hash = chainHash(h.hash, { id: r.id, type: r.type, version: r.version, runId: r.runId, streamId: r.streamId, streamPosition, data: r.dataValue, meta: r.metaValue });
    head.set(r.streamId, { pos: streamPosition, hash });
    out.push({ ...r, streamPosition, hash });
  }
  return out;
}
