import type { Pool } from 'pg';
import { canonicalJson, type EventSigner, type EventVerifier } from '@rstar/security';

/** The domain of a checkpoint signature ({@link EventSigner.signStatement}). */
const DOMAIN = 'chain-checkpoint';

/** One stream's head in a checkpoint: its id, last position and that event's chain hash (hex; null when unchained). */
export type StreamHead = [streamId: string, position: number, hash: string | null];

/**
 * The archiver's signed statement about a run's chain: the head of each of its streams and how many
 * chained events the run held, `sealed` once its `RunCompleted`/`RunFailed` is archived (nothing may follow).
 */
export interface ChainCheckpoint {
  runId: string;
  seq: number;
  events: number;
  streams: StreamHead[];
  sealed: boolean;
  keyId: string | null;
  sig: string | null;
}

/** The bytes a checkpoint's signature covers. */
export function checkpointContent(c: Pick<ChainCheckpoint, 'runId' | 'seq' | 'events' | 'streams' | 'sealed'>): Buffer {
  return Buffer.from(canonicalJson({ runId: c.runId, seq: c.seq, events: c.events, streams: c.streams, sealed: c.sealed }));
}

/**
 * The chain checkpoints of the archive (migration 4): written by the archiver every N events of a run and
 * sealed when the run ends, signed with its key; checked by `rstar replay verify` against the events.
 */
export class ChainCheckpoints {
  constructor(
    private readonly pool: Pool,
    private readonly schema: string,
  ) {}

  /** Each stream's head of a run and its chained-event count, as stored now. */
  async heads(runId: string): Promise<{ events: number; streams: StreamHead[] }> {
    const r = await this.pool.query(
      `SELECT DISTINCT ON (stream_id) stream_id, stream_position, encode(hash, 'hex') AS hash,
              count(hash) OVER (PARTITION BY run_id) AS chained
         FROM "${this.schema}".events WHERE run_id = $1 ORDER BY stream_id, stream_position DESC`,
      [runId],
    );
    return {
      events: r.rows.length ? Number(r.rows[0].chained) : 0,
      streams: r.rows.map((x) => [x.stream_id, Number(x.stream_position), x.hash] as StreamHead),
    };
  }

  /**
   * Write the next checkpoint of `runId` from the heads as stored now, signed with `signer` (unsigned
   * without one: it still catches a cut tail, but anyone who may insert rows could forge it).
   */
  async write(runId: string, sealed: boolean, signer: EventSigner | null): Promise<ChainCheckpoint> {
    // Another writer may take the same seq meanwhile (a second archiver): then read the heads again and take the next.
    for (let attempt = 1; ; attempt++) {
      const { events, streams } = await this.heads(runId);
      const last = await this.pool.query(`SELECT coalesce(max(seq), 0) AS s FROM "${this.schema}".chain_checkpoints WHERE run_id = $1`, [runId]);
      const c: ChainCheckpoint = { runId, seq: Number(last.rows[0].s) + 1, events, streams, sealed, keyId: signer?.keyId ?? null, sig: null };
      c.sig = signer ? signer.signStatement(DOMAIN, checkpointContent(c)) : null;
      const r = await this.pool.query(
        `INSERT INTO "${this.schema}".chain_checkpoints (run_id, seq, events, streams, sealed, key_id, sig) VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7) ON CONFLICT DO NOTHING`,
        [runId, c.seq, c.events, JSON.stringify(c.streams), c.sealed, c.keyId, c.sig],
      );
      if (r.rowCount === 1 || attempt >= 10) return c;
    }
  }

  /** A run's checkpoints, oldest first. */
  async list(runId: string): Promise<ChainCheckpoint[]> {
    const r = await this.pool.query(`SELECT seq, events, streams, sealed, key_id, sig FROM "${this.schema}".chain_checkpoints WHERE run_id = $1 ORDER BY seq`, [runId]);
    return r.rows.map((x) => ({ runId, seq: Number(x.seq), events: Number(x.events), streams: x.streams as StreamHead[], sealed: x.sealed, keyId: x.key_id, sig: x.sig }));
  }

  /**
   * Check a run's events against its checkpoints. With a `verifier` (the trusted keys) the run is expected
   * to be secured: every checkpoint must be signed by `archiverKeyId` (default `control-plane`), at least
   * one must exist, and the run must be sealed (a sealed checkpoint: its `RunCompleted`/`RunFailed` was
   * archived) unless `allowUnsealed` (a run still in progress; an ended run must be sealed even then).
   * Against the last checkpoint: every stream it names must still reach its position with the same hash
   * (else the tail was cut, or the chain rewritten or NULLed), the run must hold at least its count of
   * chained events, and once sealed no event may follow (a row appended afterwards). Problems name the
   * stream, position or checkpoint, and the fix.
   */
  async verify(runId: string, o: { verifier: EventVerifier | null; archiverKeyId?: string; ended: boolean; allowUnsealed?: boolean }): Promise<CheckpointReport> {
    const list = await this.list(runId);
    const problems: string[] = [];
    const signer = o.archiverKeyId ?? 'control-plane';
    const sealed = list.some((c) => c.sealed);
    if (o.verifier) {
      if (!o.verifier.keyIds.includes(signer)) problems.push(`the trusted keys hold no key of the archiver ("${signer}"), so its checkpoints cannot be checked: pass the trusted-keys.json of \`rstar security init\`, which holds every principal's key`);
      for (const c of list) {
        if (!c.sig || c.keyId !== signer || !o.verifier.verifyStatement(signer, DOMAIN, checkpointContent(c), c.sig)) {
          problems.push(`checkpoint ${c.seq} is not signed by the archiver ("${signer}")${c.keyId ? ` (key id "${c.keyId}")` : ''}`);
        }
      }
      if (o.ended && !sealed) problems.push('the run ended but no sealed checkpoint exists (its seal was removed, or the run was archived without a signing archiver)');
      else if (!sealed && !o.allowUnsealed) {
        problems.push('the run is not sealed: no checkpoint seals it and no RunCompleted/RunFailed is archived, so it is still in progress, or its tail was cut; pass --allow-unsealed to check a run that is still running');
      }
      if (!list.length && !o.allowUnsealed) {
        problems.push(`no checkpoint of the archiver ("${signer}") covers the run's chain: its checkpoints were deleted, or it was archived without a signing archiver (the control plane without its signing key)`);
      }
    }
    const last = list[list.length - 1];
    const now = await this.heads(runId);
    if (!last) return { ok: problems.length === 0, checkpoints: 0, sealed: false, uncovered: now.events, problems };
    const current = new Map(now.streams.map(([s, p]) => [s, p]));
    const byPos = await this.pool.query(
      `SELECT e.stream_id, e.stream_position, encode(e.hash, 'hex') AS hash FROM "${this.schema}".events e
         JOIN jsonb_to_recordset($2::jsonb) AS h(s text, p bigint) ON e.stream_id = h.s AND e.stream_position = h.p
        WHERE e.run_id = $1`,
      [runId, JSON.stringify(last.streams.map(([s, p]) => ({ s, p })))],
    );
    const at = new Map(byPos.rows.map((x) => [`${x.stream_id}#${x.stream_position}`, x.hash as string | null]));
    for (const [stream, position, hash] of last.streams) {
      if (!at.has(`${stream}#${position}`)) {
        problems.push(`cut tail: stream ${stream} ends at position ${current.get(stream) ?? 0}, but checkpoint ${last.seq} saw it at position ${position}`);
      } else if (at.get(`${stream}#${position}`) !== hash) {
        problems.push(`stream ${stream} position ${position}: its hash ${at.get(`${stream}#${position}`) ?? 'NULL'} is not the ${hash ?? 'NULL'} checkpoint ${last.seq} signed (the chain was rewritten or its hashes removed)`);
      }
    }
    if (now.events < last.events) problems.push(`the run holds ${now.events} chained events, checkpoint ${last.seq} counted ${last.events}`);
    if (last.sealed) {
      const sealedAt = new Map(last.streams.map(([s, p]) => [s, p]));
      for (const [stream, position] of now.streams) {
        if (position > (sealedAt.get(stream) ?? 0)) problems.push(`stream ${stream} has events up to position ${position} after the run was sealed at ${sealedAt.get(stream) ?? 0} (checkpoint ${last.seq}): appended afterwards`);
      }
    }
    return { ok: problems.length === 0, checkpoints: list.length, sealed, uncovered: Math.max(0, now.events - last.events), problems };
  }
}

/** The outcome of {@link ChainCheckpoints.verify}. */
export interface CheckpointReport {
  ok: boolean;
  checkpoints: number;
  /** A sealed checkpoint exists (the run's end was archived and sealed). */
  sealed: boolean;
  /** Chained events after the last checkpoint (all of them without one): covered only by their signatures. */
  uncovered: number;
  problems: string[];
}
