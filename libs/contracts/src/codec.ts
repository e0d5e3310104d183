import { z } from 'zod';
import { EnvelopeHeadSchema, type EventEnvelope } from './envelope';
import { EVENT_CONTRACTS, EVENT_TYPES, type EventData, type EventDataInput, type EventType } from './events';
import { ids } from './ids';
import { InvalidEventError, UnknownEventError } from './errors';
import { upcastData } from './upcast';

/** A typed event envelope of one contract type. */
export type RstarEvent<T extends EventType = EventType> = { [K in T]: EventEnvelope<K, EventData<K>> }[T];

export interface MakeEventOptions<T extends EventType> {
  runId: string;
  streamId: string;
  /** Key that makes the id deterministic: id = `<type>:<key>`. */
  key: string;
  data: EventDataInput<T>;
  producer: string;
  /** The event this one was caused by; its correlation id and trace context are inherited. */
  causedBy?: Pick<EventEnvelope, 'id' | 'meta'> | null;
  traceparent?: string | null;
  /** Clock for `recordedAt` (injectable for deterministic tests). */
  now?: () => Date;
}

/**
 * Build a validated event of the current version. Throws {@link InvalidEventError} naming the field
 * when `data` does not satisfy the contract.
 */
export function makeEvent<T extends EventType>(type: T, o: MakeEventOptions<T>): RstarEvent<T> {
  const contract = EVENT_CONTRACTS[type];
  const parsed = contract.data.safeParse(o.data);
  if (!parsed.success) throw invalid(`${type}.data`, parsed.error);
  return {
    id: ids.event(type, o.key),
    type,
    version: contract.version,
    runId: o.runId,
    streamId: o.streamId,
    data: parsed.data,
    meta: {
      correlationId: o.causedBy?.meta.correlationId ?? o.runId,
      causationId: o.causedBy?.id ?? null,
      traceparent: o.traceparent ?? o.causedBy?.meta.traceparent ?? null,
      producer: o.producer,
      recordedAt: (o.now ?? (() => new Date()))().toISOString(),
    },
  } as RstarEvent<T>;
}

/**
 * Parse an event from JSON text, bytes or an object: validate the envelope, upcast older versions to
 * the current one, validate the data. Throws {@link InvalidEventError} (with the offending field path)
 * or {@link UnknownEventError}.
 */
export function parseEvent(raw: string | Uint8Array | unknown): RstarEvent {
  let obj: unknown = raw;
  if (typeof raw === 'string' || raw instanceof Uint8Array) {
    const text = typeof raw === 'string' ? raw : new TextDecoder().decode(raw);
    try {
      obj = JSON.parse(text);
    } catch (e) {
      throw new InvalidEventError(`payload is not JSON: ${(e as Error).message}`, null);
    }
  }
  const head = EnvelopeHeadSchema.safeParse(obj);
  if (!head.success) throw invalid('', head.error);
  const { type, version } = head.data;
  if (!(EVENT_TYPES as string[]).includes(type)) {
    throw new UnknownEventError(`unknown event type "${type}" (field "type"); known: ${EVENT_TYPES.join(', ')}`);
  }
  const contract = EVENT_CONTRACTS[type as EventType];
  if (version > contract.version) {
    throw new UnknownEventError(
      `${type} v${version} is newer than this code knows (v${contract.version}); upgrade the consumer`,
      'version',
    );
  }
  const upcast = upcastData(type as EventType, version, contract.version, head.data.data);
  const data = contract.data.safeParse(upcast);
  if (!data.success) throw invalid(`${type}.data`, data.error);
  return { ...head.data, version: contract.version, data: data.data } as RstarEvent;
}

function invalid(prefix: string, err: z.ZodError): InvalidEventError {
  const issue = err.issues[0];
  const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
  return new InvalidEventError(`invalid field "${path || '(root)'}": ${issue.message}`, path || null);
}

