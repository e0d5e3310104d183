import type { RstarEvent } from '@rstar/contracts';
import { rstarTracer, SpanKind, traceparentOf, traceparentOfSpan, type Attributes } from '@rstar/telemetry';

/**
 * Set `meta.traceparent` of an event about to be published (in place: the caller's object then says
 * what went on the wire). NATS has no OpenTelemetry instrumentation, so the bus carries W3C trace context
 * itself, in the `traceparent` header and in the event's metadata (the archive keeps the latter):
 * - inside a span (a handler's consumer span, a step, a rollout): that span is the parent of whatever
 *   the event causes;
 * - outside any span, an event that already names a parent (set by its producer, or inherited from the
 *   event that caused it) keeps it;
 * - otherwise, when tracing is on, a short producer span `publish <type>` starts a new trace for it.
 * Without an SDK (tracing off) nothing records and the field stays as it was.
 */
export function stampTraceparent(e: RstarEvent): void {
  const active = traceparentOf();
  if (active) {
    e.meta.traceparent = active;
    return;
  }
  if (e.meta.traceparent) return;
  const span = rstarTracer().startSpan(`publish ${e.type}`, { kind: SpanKind.PRODUCER, root: true, attributes: eventAttributes(e) });
  e.meta.traceparent = traceparentOfSpan(span);
  span.end();
}

/** The span attributes naming an event: messaging system, type, id and run (OpenTelemetry messaging conventions). */
export function eventAttributes(e: Pick<RstarEvent, 'id' | 'type' | 'runId'>, extra: Attributes = {}): Attributes {
  return { 'messaging.system': 'nats', 'messaging.message.id': e.id, 'rstar.event.type': e.type, 'rstar.run.id': e.runId, ...extra };
}
