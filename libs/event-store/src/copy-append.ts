import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { PlannedRow } from './append.plan';

export type { AppendRow } from './append.plan';

/** Escape a value for COPY text format: backslash first, then the row/column delimiters. */
function copyText(v: string): string {
  return /[\\\n\r\t]/.test(v) ? v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t') : v;
}

/**
 * The COPY fast path of {@link EventStore.appendBatch} on real Postgres (STACK: COPY ~50k rows/s vs
 * `unnest` ~28k rows/s on 2 cores). Runs inside the caller's transaction with rows planned under the
 * per-stream advisory locks (`planAppend`: ids already stored dropped, positions and chain hashes
 * assigned), and COPYs them straight into the table (COPY has no `ON CONFLICT`). An id belongs to one
 * stream (ids derive from the event), so a concurrent writer of the same id holds the same lock; if a
 * forged id on another stream still collides, COPY fails with unique_violation (23505) and the caller
 * falls back to `unnest`. Returns the number of rows written.
 */
export async function copyAppend(c: PoolClient, table: string, rows: readonly PlannedRow[]): Promise<number> {
  if (!rows.length) return 0;
  const lines: string[] = [];
  for (const r of rows) {
    lines.push(
      `${copyText(r.id)}\t${copyText(r.type)}\t${r.version}\t${copyText(r.runId)}\t${copyText(r.streamId)}\t${r.streamPosition}\t${copyText(r.data)}\t${copyText(r.meta)}\t\\\\x${r.hash.toString('hex')}\n`,
    );
  }
  const sink = c.query(copyFrom(`COPY ${table} (id, type, version, run_id, stream_id, stream_position, data, meta, hash) FROM STDIN`));
  await pipeline(Readable.from([lines.join('')]), sink);
  return lines.length;
}
