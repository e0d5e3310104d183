import {
  ContractError,
  InvalidEventError,
  UnknownEventError,
  makeEvent,
  parseEvent,
  type RstarEvent,
} from '@rstar/contracts';
import type { EventVerifier } from '@rstar/security';
import { failSpan, inSpan, SpanKind, type Logger } from '@rstar/telemetry';
import { PermanentError, type DeliveryContext, type EventHandler } from './bus.port';
import { admitEvent } from './admission';
import { eventAttributes } from './trace.propagation';

/** What the transport does with a message after its handler ran (docs/design/style.md rule 3: mapped once, here). */
export type DeliveryOutcome =
  | { kind: 'ack' }
  | { kind: 'retry'; error: unknown }
  | { kind: 'dead'; reason: string; field: string | null };

/**
 * Parse a payload and run the handler, mapping the result to ack / retry / dead-letter:
 * invalid or unknown payloads and {@link PermanentError}/{@link ContractError} thrown by the handler
 * dead-letter; any other error (including `TransientError`) retries; an event of a type the
 * subscription did not ask for is acked without calling the handler. An event refused by
 * {@link admitEvent} — its type not the one of the subject it came on (checked when `prefix` is given),
 * or, with a `verifier`, unsigned, wrongly signed or signed by a principal that does not produce its
 * type — is dead-lettered (the reason naming the event) and never reaches the handler.
 *
 * The handler runs inside a consumer span `process <type>`, a child of the span the event's
 * `meta.traceparent` names (a new trace when it names none), so every event the handler publishes and
 * every span it starts continues the event's trace. A failed delivery marks the span as an error.
 */
export async function deliver(
  payload: string | Uint8Array,
  types: ReadonlySet<string>,
  handler: EventHandler<any>,
  ctx: DeliveryContext,
  consumer = '',
  verifier?: EventVerifier | null,
  prefix: string | null = null,
): Promise<DeliveryOutcome> {
  const parsed = parsePayload(payload);
  if (!('event' in parsed)) return parsed;
  const event = parsed.event;
  // Checked before the type filter: a forged type on a subscribed subject is refused, not skipped unseen.
  // The signature is checked on the payload as sent: the schema parse may default or drop fields the producer signed.
  const refused = admitEvent(event, () => JSON.parse(typeof payload === 'string' ? payload : new TextDecoder().decode(payload)), ctx.subject, prefix, verifier);
  if (refused) return { kind: 'dead', ...refused };
  if (!types.has(event.type)) return { kind: 'ack' };
  const attributes = eventAttributes(event, {
    'messaging.operation.type': 'process',
    'messaging.destination.name': ctx.subject,
    'messaging.consumer.group.name': consumer,
    'messaging.message.delivery_count': ctx.deliveryCount,
  });
  return inSpan(`process ${event.type}`, { kind: SpanKind.CONSUMER, parent: event.meta.traceparent, attributes }, async (span) => {
    try {
      await handler(event, ctx);
      return { kind: 'ack' } as const;
    } catch (e) {
      failSpan(span, e);
      if (e instanceof PermanentError || e instanceof ContractError) {
        return { kind: 'dead', reason: `${e.code}: ${e.message}`, field: e.field } as const;
      }
      return { kind: 'retry', error: e } as const;
    }
  });
}

/** Parse and validate a payload; an invalid or unknown one maps to the dead-letter outcome naming the field. */
export function parsePayload(payload: string | Uint8Array): { event: RstarEvent } | { kind: 'dead'; reason: string; field: string | null } {
  try {
    return { event: parseEvent(payload) };
  } catch (e) {
    if (e instanceof InvalidEventError || e instanceof UnknownEventError) {
      return { kind: 'dead', reason: `${e.code}: ${e.message}`, field: e.field };
    }
    return { kind: 'dead', reason: `invalid_event: ${(e as Error).message}`, field: null };
  }
}

const MAX_DLQ_PAYLOAD = 64 * 1024;

/**
 * The `DeadLettered` event for a message a consumer gave up on. Its id is deterministic per
 * (consumer, message id) so a re-dead-lettered redelivery is deduplicated.
 */
export function deadLetterEvent(o: {
  consumer: string;
  subject: string;
  msgId: string;
  payload: string | Uint8Array;
  reason: string;
  field: string | null;
}): RstarEvent<'DeadLettered'> {
  const text = typeof o.payload === 'string' ? o.payload : new TextDecoder().decode(o.payload);
  let runId = 'unknown';
  try {
    const obj = JSON.parse(text);
    if (obj && typeof obj.runId === 'string' && obj.runId) runId = obj.runId;
  } catch {
    // not JSON: the run is unknown
  }
  return makeEvent('DeadLettered', {
    runId,
    streamId: `dlq-${o.consumer}`,
    key: `${o.consumer}:${o.msgId}`,
    producer: `messaging/${o.consumer}`,
    data: {
      subject: o.subject,
      consumer: o.consumer,
      reason: o.reason,
      field: o.field,
      payload: text.length > MAX_DLQ_PAYLOAD ? text.slice(0, MAX_DLQ_PAYLOAD) : text,
    },
  });
}

/** Log the one clear line a dead letter deserves: consumer, subject, field and reason. */
export function logDeadLetter(log: Logger, consumer: string, subject: string, msgId: string, reason: string, field: string | null): void {
  log.warn(`dead-lettered message ${msgId} on ${subject} for consumer ${consumer}: field "${field ?? '(none)'}": ${reason}`, {
    consumer,
    subject,
    msgId,
    field,
    reason,
  });
}
