import type { EventType, RstarEvent } from '@rstar/contracts';
import type { EventVerifier } from '@rstar/security';
import { busSubjectOf } from './subjects';

/** Why a consumer refuses an event before any handler sees it. */
export interface Refusal {
  reason: string;
  field: string;
}

/**
 * Whether a consumer may act on `event`, which arrived on `subject` (issue 27: events bound to subject and
 * producer). The event's type must be the one its subject carries (`<prefix>` + the contract's subject):
 * NATS lets a principal publish only on the subjects of the types it produces, so a type found on another
 * type's subject was put there by a principal that may not produce it (tool-execution's `RunCompleted`
 * on `rstar.tool.completed`). With a `verifier` that requires the type signed (in secured mode every
 * type), the signature must be valid and its signer a producer of the type ({@link EventVerifier.verify}).
 * `raw` is the payload as sent (`JSON.parse`), which the signature covers.
 * @returns null when admitted, else the refusal (reason code first, then the event and the fix).
 */
export function admitEvent(event: RstarEvent, raw: () => Record<string, unknown>, subject: string, prefix: string | null, verifier?: EventVerifier | null): Refusal | null {
  if (prefix !== null) {
    const expected = busSubjectOf(prefix, event.type as EventType);
    if (subject !== expected) {
      return { reason: `subject_mismatch: ${event.type} ${event.id} arrived on ${subject}, but ${event.type} is published on ${expected} only`, field: 'type' };
    }
  }
  if (verifier?.requires(event.type)) {
    const check = verifier.verify(raw());
    if (!check.ok) return { reason: `${check.code}: ${check.reason}`, field: 'meta.signature' };
  }
  return null;
}
