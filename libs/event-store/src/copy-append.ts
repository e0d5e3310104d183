import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/** One row of the archive as the append paths take it: data and meta already JSON text. */
export interface AppendRow {
  id: string;
  type: string;
  version: number;
  runId: string;
  streamId: string;
  data: string;
  meta: string;
}

/** Escape a value for COPY text format: backslash first, then the row/column delimiters. */
function copyText(v: string): string {
  return /[\\\n\r\t]/.test(v) ? v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t') : v;
}

/**
 * The COPY fast path of {@link EventStore.appendBatch} on real Postgres (STACK: COPY ~50k rows/s vs
 * `unnest` ~28k rows/s on 2 cores). Runs inside the caller's transaction, after the caller took the
 * per-stream advisory locks: under those locks the ids already stored and each stream's head position
 * cannot change, so positions are assigned here and the rows are COPYed straight into the table
 * (COPY has no `ON CONFLICT`). An id belongs to one stream (ids derive from the event), so a
 * concurrent writer of the same id holds the same lock; if a forged id on another stream still
 * collides, COPY fails with unique_violation (23505) and the caller falls back to `unnest`.
 * Returns the number of rows written.
 */
export async function copyAppend(c: PoolClient, table: string, rows: readonly AppendRow[], streams: readonly string[]): Promise<number> {
  const known = await c.query(
    `SELECT id, NULL::text AS stream_id, NULL::bigint AS pos FROM ${table} WHERE id = ANY($1::text[])
     UNION ALL
     SELECT NULL, s, (SELECT max(e.stream_position) FROM ${table} e WHERE e.stream_id = s) FROM unnest($2::text[]) s`,
    [rows.map((r) => r.id), streams],
  );
  const seen = new Set<string>();
  const head = new Map<string, number>();
  for (const r of known.rows) {
    if (r.id !== null) seen.add(r.id);
    else if (r.pos !== null) head.set(r.stream_id, Number(r.pos));
  }
  const lines: string[] = [];
  for (const r of rows) {
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    const pos = (head.get(r.streamId) ?? 0) + 1;
    head.set(r.streamId, pos);
    lines.push(
      `${copyText(r.id)}\t${copyText(r.type)}\t${r.version}\t${copyText(r.runId)}\t${copyText(r.streamId)}\t${pos}\t${copyText(r.data)}\t${copyText(r.meta)}\n`,
    );
  }
  if (!lines.length) return 0;
  const sink = c.query(copyFrom(`COPY ${table} (id, type, version, run_id, stream_id, stream_position, data, meta) FROM STDIN`));
  await pipeline(Readable.from([lines.join('')]), sink);
  return lines.length;
}
