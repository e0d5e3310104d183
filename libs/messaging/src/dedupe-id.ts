import { createHash } from 'node:crypto';
import type { RstarEvent } from '@rstar/contracts';

const DIGEST_SUFFIX = /\|sha256:[A-Za-z0-9_-]+$/;

/**
 * SHA-256 (base64url, 43 characters) of what makes two copies of an event the same event: its type, run,
 * stream and data, as the archive compares them (append.plan.ts). The meta (trace context, timestamps,
 * signature) differs between honest copies and is left out. Hashed over `JSON.stringify`, not a canonical
 * form: copies made by the same code serialize identically, and an equal copy that serializes differently
 * only misses the bus's dedupe and is dropped by the archive as a plain duplicate, never lost.
 */
export function contentDigest(e: Pick<RstarEvent, 'type' | 'runId' | 'streamId' | 'data'>): string {
  return createHash('sha256').update(JSON.stringify([e.type, e.runId, e.streamId, e.data])).digest('base64url');
}

/**
 * The `Nats-Msg-Id` JetStream deduplicates a publish by: `<subject>|<event id>|sha256:<content digest>`.
 * - The subject: ids are predictable (`StepCompleted:<run>:0`) and the stream's duplicate window spans every
 *   subject, so an id alone would let any principal squat the id of an event it may not produce by
 *   publishing it early on its own subject. Only a producer of the subject's type can publish there.
 * - The content digest ({@link contentDigest}): with the id alone, a copy with different content published
 *   inside the 2 minute window (a squatter on its own subject, a buggy replica) would be dropped by the
 *   server without a trace, the first copy winning. With the digest it is a different message: it reaches
 *   the archiver, which records the id collision in the quarantine (an alarm, as outside the window). An
 *   identical re-publish (a retry, a resumed run) has the same digest and is still deduplicated.
 */
export function dedupeId(subject: string, e: Pick<RstarEvent, 'id' | 'type' | 'runId' | 'streamId' | 'data'>): string {
  return `${subject}|${e.id}|sha256:${contentDigest(e)}`;
}

/** The event id in a `Nats-Msg-Id` made by {@link dedupeId} (a raw publish's `<subject>|<id>`, or its id as is), for logs and dead letters. */
export function eventIdOfMsgId(msgId: string | null | undefined): string {
  if (!msgId) return '';
  return msgId.slice(msgId.indexOf('|') + 1).replace(DIGEST_SUFFIX, '');
}
