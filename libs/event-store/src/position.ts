import { EventStoreConfigError } from './errors';

/**
 * A reader's position in the global log: the (transaction id, global position) of the last event read.
 * Readers page by this pair, not by global position alone, so an event whose transaction commits late
 * (it took a lower global position than events already read) is never skipped (emmett's technique).
 * `txid` is a Postgres xid8 as a decimal string.
 */
export interface LogPosition {
  txid: string;
  position: number;
}

/** The position before the first event. */
export const START: LogPosition = { txid: '0', position: 0 };

/** `"<txid>-<position>"`, the opaque cursor the HTTP API hands out. */
export function encodePosition(p: LogPosition): string {
  return `${p.txid}-${p.position}`;
}

/** Inverse of {@link encodePosition}; throws {@link EventStoreConfigError} on a malformed cursor. */
export function decodePosition(s: string, field = 'after'): LogPosition {
  const m = /^(\d+)-(\d+)$/.exec(s);
  if (!m) throw new EventStoreConfigError(`"${field}" must be a cursor "<txid>-<position>" as returned by a previous page, got "${s}"`, field);
  return { txid: m[1], position: Number(m[2]) };
}
