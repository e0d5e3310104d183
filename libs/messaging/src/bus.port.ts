import { RstarError } from '@rstar/contracts';
import type { EventType, RstarEvent } from '@rstar/contracts';

/** Per-delivery context handed to a handler. */
export interface DeliveryContext {
  /** The subject the message arrived on (with the bus's prefix). */
  subject: string;
  /** 1 on first delivery; >1 when redelivered after a nak, a crash or an ack timeout. */
  deliveryCount: number;
  /** Extend the ack deadline for a long handler (JetStream `working()` / +WPI). */
  working(): void;
}

/** A handler: resolve = ack; throw {@link TransientError} (or any non-contract error) = nak with backoff. */
export type EventHandler<T extends EventType = EventType> = (
  event: Extract<RstarEvent, { type: T }>,
  ctx: DeliveryContext,
) => Promise<void>;

export interface SubscribeOptions<T extends EventType> {
  /** Durable consumer name; consumers with the same name share the work (a queue). */
  durable: string;
  /** Event types to receive. */
  types: readonly T[];
  handler: EventHandler<T>;
  /** Max handlers in flight for this subscription (default 16). */
  concurrency?: number;
  /** Redeliveries before the message is dead-lettered (default 20). */
  maxDeliver?: number;
  /** Ack deadline in ms before redelivery unless `working()` is called (default 30 s). */
  ackWaitMs?: number;
  /**
   * Where a NEW durable starts: `'new'` (default) = only events published after it is created;
   * `'all'` = everything the bus still holds (the archiver). An existing durable always resumes.
   */
  from?: 'new' | 'all';
  /** Redelivery delay after a failure: `initialMs * 2^(n-1)`, capped at `maxMs` (default 250 ms .. 10 s). */
  backoff?: { initialMs?: number; maxMs?: number };
  /**
   * Also receive messages on subjects no contract names (they fail parsing and are dead-lettered);
   * the archiver sets this so nothing published under the prefix goes unseen.
   */
  allSubjects?: boolean;
}

/** A live subscription. */
export interface Subscription {
  /** Stop fetching, wait for in-flight handlers, then release the consumer. */
  drain(): Promise<void>;
  /** Messages published but not yet delivered and acked for this consumer. */
  lag(): Promise<number>;
}

/**
 * The event bus port (docs/design/architecture.md §4). Two implementations: JetStream (distributed) and the
 * in-process bus (standalone). Same semantics: durable, at-least-once delivery with deduplication by
 * event id on publish, explicit ack after the handler resolves.
 */
export interface EventBus {
  /** Publish events; resolves when every one is durably stored (JetStream ack). Duplicate ids are dropped. */
  publish(events: RstarEvent | readonly RstarEvent[]): Promise<void>;
  subscribe<T extends EventType>(opts: SubscribeOptions<T>): Promise<Subscription>;
  /** Drain every subscription and close the connection. */
  close(): Promise<void>;
}

/**
 * Optional extension both buses implement: publish raw bytes on a subject (under the bus's prefix),
 * bypassing contract validation. For tests of dead-lettering and for bridges; services use `publish`.
 */
export interface RawPublisher {
  /** `subject` is the contract subject (`rstar.run.started`); the bus maps it to its own prefix. */
  publishRaw(subject: string, payload: string | Uint8Array, msgId?: string): Promise<void>;
}

/** Thrown by a handler for a failure that may pass on retry (e.g. a dependency is down): nak with backoff. */
export class TransientError extends RstarError {
  constructor(message: string, cause?: unknown) {
    super('transient', message, null, { cause });
  }
}

/** Thrown by a handler for an input it can never process: terminate + dead-letter, never retried. */
export class PermanentError extends RstarError {
  constructor(message: string, field: string | null = null) {
    super('permanent', message, field);
  }
}

/** Options of {@link BatchSubscriber.subscribeBatches}. */
export interface BatchSubscribeOptions {
  /** Durable consumer name. */
  durable: string;
  /** Where a NEW durable starts (see {@link SubscribeOptions.from}); default `'new'`. */
  from?: 'new' | 'all';
  /** Most events per handler call. */
  maxBatch: number;
  /** Longest a partial batch waits for more events while a handler slot is free, in ms. */
  maxWaitMs: number;
  /** Batches handled at once (default 2: one fills while the other is handled). */
  inflight?: number;
  /** Ack deadline in ms before redelivery (default 30 s). */
  ackWaitMs?: number;
  /** Deliveries of one message before it is dead-lettered (default 20). */
  maxDeliver?: number;
  /** Redelivery delay after a failed batch (see {@link SubscribeOptions.backoff}). */
  backoff?: { initialMs?: number; maxMs?: number };
  /**
   * Handle a batch of valid events, in delivery order (every subject under the bus's prefix; invalid
   * payloads were already dead-lettered). Resolve = ack every message of the batch; throw = nak every
   * one with backoff (each goes to the dead letters after `maxDeliver`).
   */
  handler: (events: RstarEvent[]) => Promise<void>;
}

/**
 * Optional extension a bus implements when it can hand a consumer whole batches (JetStream): one
 * handler call and one settle pass per batch instead of a promise per message. The archiver uses it.
 */
export interface BatchSubscriber {
  subscribeBatches(opts: BatchSubscribeOptions): Promise<Subscription>;
}

/** True when `bus` implements {@link BatchSubscriber}. */
export function isBatchSubscriber(bus: unknown): bus is BatchSubscriber {
  return typeof (bus as BatchSubscriber | null)?.subscribeBatches === 'function';
}
