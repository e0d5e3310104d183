import type { Pool } from 'pg';
import { ChainCheckpoints } from './chain.checkpoints';
import { EventStoreConfigError } from './errors';
import { ChainVerifier, type ChainReport, type ChainRow } from './hash-chain';

/** The rows per cursor page of a chain check (default 5000). @throws EventStoreConfigError naming `pageSize`. */
function pageSizeOf(n: number | undefined): number {
  const l = n ?? 5000;
  if (!Number.isInteger(l) || l < 1 || l > 100_000) throw new EventStoreConfigError(`"pageSize" must be an integer in 1..100000, got ${n}`, 'pageSize');
  return l;
}

/**
 * The archive's tamper evidence, apart from appends and reads: the hash chain of a run's streams
 * (hash-chain.ts) and the archiver's signed checkpoints of it (chain.checkpoints.ts).
 */
export class ArchiveChain {
  readonly checkpoints: ChainCheckpoints;
  private readonly t: string;

  constructor(
    private readonly pool: Pool,
    schema: string,
  ) {
    this.t = `"${schema}".events`;
    this.checkpoints = new ChainCheckpoints(pool, schema);
  }

  /**
   * Check the hash chain of every stream of a run (`rstar replay verify`): each event's stored hash against
   * its stored content and its predecessor's hash (hash-chain.ts). Reads the run once, stream by stream in
   * stream order, through a server-side cursor in pages of `pageSize` rows, as stored (not upcast). The
   * report names the first event that breaks the chain. `onRow` sees every row as read (e.g. to check
   * its producer's signature).
   */
  async verify(runId: string, opts: { pageSize?: number; onRow?: (row: ChainRow) => void } = {}): Promise<ChainReport> {
    const verifier = new ChainVerifier();
    const pageSize = pageSizeOf(opts.pageSize);
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN READ ONLY');
      await c.query(
        `DECLARE rstar_chain NO SCROLL CURSOR FOR
         SELECT global_position, id, type, version, run_id, stream_id, stream_position, data, meta, hash FROM ${this.t}
         WHERE run_id = $1 ORDER BY stream_id, stream_position`,
        [runId],
      );
      for (;;) {
        const r = await c.query(`FETCH ${pageSize} FROM rstar_chain`);
        for (const row of r.rows) {
          const chainRow: ChainRow = {
            id: row.id, type: row.type, version: row.version, runId: row.run_id, streamId: row.stream_id, streamPosition: Number(row.stream_position),
            globalPosition: Number(row.global_position), data: row.data, meta: row.meta, hash: row.hash,
          };
          verifier.add(chainRow);
          opts.onRow?.(chainRow);
        }
        if (r.rows.length < pageSize) break;
      }
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      c.release();
    }
    return verifier.report();
  }
}
