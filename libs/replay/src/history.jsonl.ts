import { readFileSync, writeFileSync } from 'node:fs';
import { parseEvent, type RstarEvent } from '@rstar/contracts';
import { HistoryFileError } from './errors';

/**
 * Serialise events as JSON lines: one envelope per line (`id, type, version, runId, streamId, data,
 * meta`; archive positions of stored events are left out), log order kept.
 */
export function toJsonl(events: Iterable<RstarEvent>): string {
  let out = '';
  for (const e of events) {
    const { id, type, version, runId, streamId, data, meta } = e;
    out += JSON.stringify({ id, type, version, runId, streamId, data, meta }) + '\n';
  }
  return out;
}

/**
 * Parse JSON lines of events (each validated and upcast with `parseEvent`). Blank lines are skipped.
 * Throws {@link HistoryFileError} naming the line and the field when one does not parse.
 */
export function parseJsonl(text: string, source = '(text)'): RstarEvent[] {
  const out: RstarEvent[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === '') continue;
    try {
      out.push(parseEvent(lines[i]));
    } catch (e) {
      throw new HistoryFileError(`${source}:${i + 1}: ${(e as Error).message}`, (e as { field?: string }).field ?? null);
    }
  }
  return out;
}

/** Read a recorded history (JSON lines of events) from `file`. See {@link parseJsonl}. */
export function readHistory(file: string): RstarEvent[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new HistoryFileError(`cannot read history ${file}: ${(e as Error).message}`, 'file');
  }
  return parseJsonl(text, file);
}

/** Write events to `file` as JSON lines. */
export function writeHistory(file: string, events: Iterable<RstarEvent>): void {
  writeFileSync(file, toJsonl(events));
}
