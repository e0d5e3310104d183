import { createHash } from 'node:crypto';
import { canonicalJson } from '@rstar/security';

/**
 * The archive's hash chain (tamper evidence). Every event stored from migration 2 on has
 * `hash = SHA-256("rstar-event-chain-v1\n" || prev || canonical)`, where
 * - `prev` is the 32-byte hash of the event before it in its stream (`stream_position - 1`), or 32 zero
 *   bytes for a stream's first event or when that event predates the chain (its hash is null);
 * - `canonical` is the RFC 8785 canonical JSON (`canonicalJson`, non-finite numbers as null, as they were
 *   stored) of `{id, type, version, runId, streamId, streamPosition, data, meta}` exactly as archived:
 *   the stored version and data (not upcast), and meta with the producer's `recordedAt` and
 *   `signature`. Not covered: what the database assigns (`global_position`, `transaction_id`,
 *   `recorded_at`).
 * The archiver computes it at append time, inside the transaction that holds the stream's advisory lock,
 * so the stored order of a stream is the chained order however many producers publish to it.
 */
export const CHAIN_PREFIX = Buffer.from('rstar-event-chain-v1\n', 'utf8');
export const ZERO_HASH = Buffer.alloc(32);

/** The archived fields a chain hash covers. */
export interface ChainedContent {
  id: string;
  type: string;
  version: number;
  runId: string;
  streamId: string;
  streamPosition: number;
  /** Parsed JSON (as `pg` returns jsonb, or the event's own objects). */
  data: unknown;
  meta: unknown;
}

/** The chain hash of one archived event given the previous one's hash in its stream (null = chain start). */
export function chainHash(prev: Buffer | null, e: ChainedContent): Buffer {
  const canonical = canonicalJson(
    { id: e.id, type: e.type, version: e.version, runId: e.runId, streamId: e.streamId, streamPosition: e.streamPosition, data: e.data, meta: e.meta },
    { nonFinite: 'null' },
  );
  return createHash('sha256').update(CHAIN_PREFIX).update(prev ?? ZERO_HASH).update(canonical, 'utf8').digest();
}

/** One archived row as the verifier reads it (in stream order). */
export interface ChainRow extends ChainedContent {
  globalPosition: number;
  hash: Buffer | null;
}

/** Where a run's chain breaks first. */
export interface ChainBreak {
  eventId: string;
  type: string;
  streamId: string;
  streamPosition: number;
  globalPosition: number;
  /** `hash_mismatch` (content, order or predecessor changed), `missing_hash` (a gap in a chained stream), `position_gap` (an event removed). */
  kind: 'hash_mismatch' | 'missing_hash' | 'position_gap';
  message: string;
}

/** What {@link ChainVerifier} found. */
export interface ChainReport {
  ok: boolean;
  /** Events whose hash was checked. */
  checked: number;
  /** Events archived before the chain existed (no hash, at the start of their stream): not checked. */
  unchained: number;
  streams: number;
  /** The first break by global position, or null. */
  firstBreak: ChainBreak | null;
  /** Every stream's first break, by global position. */
  breaks: ChainBreak[];
}

/** A chain report as the one line `rstar replay verify` and the dashboard's replay page print. */
export function formatChainReport(c: ChainReport): string {
  return c.ok
    ? `hash chain: ok (${c.checked} events in ${c.streams} streams checked${c.unchained ? `, ${c.unchained} archived before the chain` : ''})`
    : `hash chain: BROKEN — ${c.firstBreak!.message}${c.breaks.length > 1 ? ` (${c.breaks.length} streams broken)` : ''}`;
}

/**
 * Checks the hash chain of a run's events, fed stream by stream in stream order ({@link add}); a stream
 * breaks at its first event whose stored hash differs from the one recomputed from its content and its
 * predecessor's stored hash, at a position gap (a deleted event), or at an unhashed event after a hashed
 * one. `report()` names the first break by global position.
 */
export class ChainVerifier {
  private stream: string | null = null;
  private prevHash: Buffer | null = null;
  private prevPosition = 0;
  private chained = false;
  private broken = false;
  private checked = 0;
  private unchained = 0;
  private streams = 0;
  private readonly breaks: ChainBreak[] = [];

  /** Add the next row (rows of a stream consecutive, in stream order). */
  add(r: ChainRow): void {
    if (r.streamId !== this.stream) {
      this.stream = r.streamId;
      this.prevHash = null;
      this.prevPosition = 0;
      this.chained = false;
      this.broken = false;
      this.streams++;
    }
    if (this.broken) return;
    const at = `event ${r.id} (${r.type}, stream ${r.streamId} position ${r.streamPosition}, global position ${r.globalPosition})`;
    if (r.streamPosition !== this.prevPosition + 1) {
      return this.fail(r, 'position_gap', `chain broken at ${at}: the stream jumps from position ${this.prevPosition} to ${r.streamPosition}, so an event was deleted`);
    }
    this.prevPosition = r.streamPosition;
    if (r.hash === null) {
      if (this.chained) return this.fail(r, 'missing_hash', `chain broken at ${at}: it has no hash but an earlier event of its stream has one (a row was inserted outside the archiver)`);
      this.unchained++;
      this.prevHash = null;
      return;
    }
    this.chained = true;
    const expected = chainHash(this.prevHash, r);
    this.checked++;
    if (!expected.equals(r.hash)) {
      return this.fail(r, 'hash_mismatch', `chain broken at ${at}: its stored hash does not match its content and its predecessor's hash, so it (or the event before it) was changed after it was archived`);
    }
    this.prevHash = r.hash;
  }

  private fail(r: ChainRow, kind: ChainBreak['kind'], message: string): void {
    this.broken = true;
    this.breaks.push({ eventId: r.id, type: r.type, streamId: r.streamId, streamPosition: r.streamPosition, globalPosition: r.globalPosition, kind, message });
  }

  report(): ChainReport {
    const breaks = [...this.breaks].sort((a, b) => a.globalPosition - b.globalPosition);
    return { ok: breaks.length === 0, checked: this.checked, unchained: this.unchained, streams: this.streams, firstBreak: breaks[0] ?? null, breaks };
  }
}
