import { EVENT_CONTRACTS, type EventType, type RstarEvent, RstarError } from '@rstar/contracts';
import { createLogger, type Logger } from '@rstar/telemetry';
import type { EventBus, RawPublisher, SubscribeOptions, Subscription } from './bus.port';
import { backoffDelay } from './backoff';
import { deadLetterEvent, deliver, logDeadLetter } from './delivery';
import { busSubjectOf, toBusSubject, toContractSubject } from './subjects';
import { stampTraceparent } from './trace.propagation';
import { BusOptionError } from './bus.errors';
import { consumerLagGauge } from './consumer-lag.gauge';
import { dedupeId } from './dedupe-id';

/** The bus was closed; publish and subscribe are refused. */
export class BusClosedError extends RstarError {
  constructor() {
    super('bus_closed', 'the event bus is closed');
  }
}

export interface InProcessBusOptions {
  /** Subject prefix (default `rstar`), as on JetStream. */
  subjectPrefix?: string;
  /** Ids seen within this window are dropped on publish (default 2 min, JetStream's duplicate window). */
  duplicateWindowMs?: number;
  /** Messages kept when no consumer still needs them, for late `from: 'all'` consumers (default 100,000). */
  retainMessages?: number;
  logger?: Logger;
}

interface Message {
  seq: number;
  subject: string;
  payload: string;
  msgId: string;
}

interface Pending {
  deliveries: number;
  /** Bumped on every delivery so a stale (timed-out) handler's late result is ignored. */
  token: number;
}


/**
 * In-memory {@link EventBus} for standalone mode, with JetStream's semantics where they matter:
 * dedupe by event id within the duplicate window; durable consumers by name that survive a drain and
 * resume where they stopped (subscriptions sharing a name share the work); bounded concurrency per
 * subscription; ack when the handler resolves; redelivery with exponential backoff on errors and on an
 * ack-wait expiry (extended by `working()`); dead-letter as a `DeadLettered` event on invalid payloads,
 * `PermanentError`, or after `maxDeliver` deliveries. Nothing survives the process (the archive does).
 */
export class InProcessBus implements EventBus, RawPublisher {
  readonly prefix: string;
  private readonly log: Logger;
  private readonly dupWindowMs: number;
  private readonly retain: number;
  /** The stream: `log[i].seq === base + i`. */
  private logMsgs: Message[] = [];
  private base = 1;
  private nextSeq = 1;
  private readonly seen = new Map<string, number>();
  private readonly consumers = new Map<string, Consumer>();
  private closed = false;

  constructor(opts: InProcessBusOptions = {}) {
    this.prefix = opts.subjectPrefix ?? 'rstar';
    this.dupWindowMs = opts.duplicateWindowMs ?? 120_000;
    this.retain = opts.retainMessages ?? 100_000;
    this.log = opts.logger ?? createLogger('in-process-bus');
  }

  /**
   * Append events to the stream (dropping a copy of an event seen in the window: same subject, id and
   * content, see `dedupeId`; a different content under a taken id goes through, to the archive's id
   * collision alarm) and wake the consumers.
   */
  async publish(events: RstarEvent | readonly RstarEvent[]): Promise<void> {
    const list = (Array.isArray(events) ? events : [events]) as readonly RstarEvent[];
    for (const e of list) stampTraceparent(e);
    for (const e of list) {
      const subject = busSubjectOf(this.prefix, e.type as EventType);
      this.append(subject, JSON.stringify(e), e.id, dedupeId(subject, e));
    }
    this.wake();
  }

  /** See {@link RawPublisher}: no validation; a missing `msgId` is never deduplicated. */
  async publishRaw(subject: string, payload: string | Uint8Array, msgId?: string): Promise<void> {
    const text = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
    this.append(toBusSubject(this.prefix, subject), text, msgId ?? null);
    this.wake();
  }

  async subscribe<T extends EventType>(opts: SubscribeOptions<T>): Promise<Subscription> {
    if (this.closed) throw new BusClosedError();
    if (!opts.durable) throw new BusOptionError('durable', 'subscribe: option "durable" is required (a consumer name)');
    if (!opts.types?.length && !opts.allSubjects) throw new BusOptionError('types', 'subscribe: option "types" must name at least one event type');
    let c = this.consumers.get(opts.durable);
    if (!c) {
      const subjects = opts.allSubjects ? null : new Set(opts.types.map((t) => busSubjectOf(this.prefix, t)));
      c = new Consumer(this, opts.durable, subjects, opts.from === 'all' ? this.base : this.nextSeq);
      this.consumers.set(opts.durable, c);
    }
    const sub = new InProcessSubscription(c, opts);
    c.subs.add(sub);
    c.pump();
    return sub;
  }

  /** Drain every subscription, then refuse further use. Durable state is dropped with the process. */
  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.all([...this.consumers.values()].flatMap((c) => [...c.subs].map((s) => s.drain())));
    this.closed = true;
  }

  /** Total messages ever accepted (after dedupe). */
  get published(): number {
    return this.nextSeq - 1;
  }

  /** @internal */
  messageAt(seq: number): Message | undefined {
    return this.logMsgs[seq - this.base];
  }
  /** @internal */
  get headSeq(): number {
    return this.nextSeq;
  }
  /** @internal */
  get logger(): Logger {
    return this.log;
  }

  /** @internal Publish a dead letter for `m` (its contract subject, reason and field). */
  deadLetter(consumer: string, m: Message, reason: string, field: string | null): void {
    const subject = toContractSubject(this.prefix, m.subject);
    logDeadLetter(this.log, consumer, subject, m.msgId, reason, field);
    const dl = deadLetterEvent({ consumer, subject, msgId: m.msgId, payload: m.payload, reason, field });
    this.append(busSubjectOf(this.prefix, 'DeadLettered'), JSON.stringify(dl), dl.id);
    this.wake();
  }

  /** @internal Drop messages every consumer is past (keeping `retain` for late `from: 'all'` consumers). */
  trim(): void {
    let low = this.nextSeq;
    for (const c of this.consumers.values()) low = Math.min(low, c.lowWatermark());
    low = Math.min(low, this.nextSeq - this.retain);
    const drop = low - this.base;
    if (drop > 4096) {
      this.logMsgs = this.logMsgs.slice(drop);
      this.base = low;
    }
  }

  /** `id` names the message (dead letters, logs); `key` (default `id`) is what the window deduplicates by. */
  private append(subject: string, payload: string, id: string | null, key: string | null = id): void {
    if (this.closed) throw new BusClosedError();
    const now = Date.now();
    if (key !== null) {
      this.pruneSeen(now);
      if (this.seen.has(key)) return;
      this.seen.set(key, now);
    }
    const seq = this.nextSeq++;
    this.logMsgs.push({ seq, subject, payload, msgId: id ?? `seq-${seq}` });
  }

  private pruneSeen(now: number): void {
    // Map iteration is insertion (= time) order, so expired ids are at the front.
    for (const [id, t] of this.seen) {
      if (now - t < this.dupWindowMs) break;
      this.seen.delete(id);
    }
  }

  private wake(): void {
    for (const c of this.consumers.values()) c.pump();
  }
}

/** Durable consumer state: survives its subscriptions, like a JetStream durable. */
class Consumer {
  readonly subs = new Set<InProcessSubscription>();
  readonly pending = new Map<number, Pending>();
  /** Messages waiting for redelivery: seq -> due time (ms). */
  readonly retries = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;
  private rr = 0;
  private pumping = false;

  constructor(
    readonly bus: InProcessBus,
    readonly name: string,
    /** Bus subjects delivered, or null for every subject. */
    readonly subjects: Set<string> | null,
    /** Next stream sequence not yet considered. */
    public cursor: number,
  ) {}

  lowWatermark(): number {
    let low = this.cursor;
    for (const seq of this.pending.keys()) low = Math.min(low, seq);
    return low;
  }

  lag(): number {
    let n = this.pending.size;
    for (let s = this.cursor; s < this.bus.headSeq; s++) if (this.matches(this.bus.messageAt(s))) n++;
    return n;
  }

  matches(m: Message | undefined): m is Message {
    return !!m && (this.subjects === null || this.subjects.has(m.subject));
  }

  /** Hand out messages to subscriptions with free capacity (retries first, then new messages). */
  pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (;;) {
        const sub = this.freeSub();
        if (!sub) break;
        const seq = this.next();
        if (seq === null) break;
        sub.deliver(seq);
      }
    } finally {
      this.pumping = false;
    }
    consumerLagGauge().set({ consumer: this.name }, this.pending.size + (this.bus.headSeq - this.cursor));
  }

  private freeSub(): InProcessSubscription | null {
    const subs = [...this.subs].filter((s) => s.hasCapacity());
    if (!subs.length) return null;
    return subs[this.rr++ % subs.length];
  }

  private next(): number | null {
    const now = Date.now();
    let earliest = Infinity;
    for (const [seq, due] of this.retries) {
      if (due <= now) {
        this.retries.delete(seq);
        return seq;
      }
      earliest = Math.min(earliest, due);
    }
    if (earliest < Infinity) this.armTimer(earliest - now);
    while (this.cursor < this.bus.headSeq) {
      const seq = this.cursor++;
      if (this.matches(this.bus.messageAt(seq))) {
        this.pending.set(seq, { deliveries: 0, token: 0 });
        return seq;
      }
    }
    return null;
  }

  private armTimer(ms: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pump();
    }, Math.max(1, ms));
  }

  settle(seq: number): void {
    this.pending.delete(seq);
    this.retries.delete(seq);
    if (seq % 1024 === 0) this.bus.trim();
  }

  /** Stop the retry timer when nobody is subscribed (a later subscriber re-arms it via pump). */
  idle(): void {
    if (this.subs.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }
}

class InProcessSubscription implements Subscription {
  private inflight = 0;
  private draining = false;
  private readonly idleWaiters: Array<() => void> = [];
  private readonly types: Set<string>;
  private readonly concurrency: number;
  private readonly maxDeliver: number;
  private readonly ackWaitMs: number;

  constructor(
    private readonly c: Consumer,
    private readonly opts: SubscribeOptions<any>,
  ) {
    this.types = new Set(opts.allSubjects ? Object.keys(EVENT_CONTRACTS) : opts.types);
    this.concurrency = Math.max(1, opts.concurrency ?? 16);
    this.maxDeliver = Math.max(1, opts.maxDeliver ?? 20);
    this.ackWaitMs = opts.ackWaitMs ?? 30_000;
  }

  hasCapacity(): boolean {
    return !this.draining && this.inflight < this.concurrency;
  }

  deliver(seq: number): void {
    const p = this.c.pending.get(seq) ?? { deliveries: 0, token: 0 };
    p.deliveries += 1;
    p.token += 1;
    this.c.pending.set(seq, p);
    const token = p.token;
    const m = this.c.bus.messageAt(seq)!;
    this.inflight += 1;
    let slotFreed = false;
    const freeSlot = () => {
      if (slotFreed) return;
      slotFreed = true;
      this.inflight -= 1;
      if (this.inflight === 0) this.idleWaiters.splice(0).forEach((r) => r());
    };
    const current = () => this.c.pending.get(seq)?.token === token;
    let ackTimer: NodeJS.Timeout;
    const armAck = () => {
      clearTimeout(ackTimer);
      ackTimer = setTimeout(() => {
        // Ack wait expired: redeliver (JetStream semantics); this handler's late result is ignored.
        if (!current()) return;
        p.token += 1;
        this.fail(seq, m, p, new Error(`ack wait of ${this.ackWaitMs} ms expired`));
        freeSlot();
        this.c.pump();
      }, this.ackWaitMs);
    };
    armAck();
    const ctx = {
      subject: m.subject,
      deliveryCount: p.deliveries,
      working: () => {
        if (current()) armAck();
      },
    };
    void Promise.resolve()
      .then(() => deliver(m.payload, this.types, this.opts.handler, ctx, this.c.name))
      .then((outcome) => {
        clearTimeout(ackTimer);
        if (!current()) return;
        if (outcome.kind === 'ack') this.c.settle(seq);
        else if (outcome.kind === 'dead') {
          this.c.settle(seq);
          this.c.bus.deadLetter(this.c.name, m, outcome.reason, outcome.field);
        } else this.fail(seq, m, p, outcome.error);
      })
      .finally(() => {
        freeSlot();
        this.c.pump();
      });
  }

  private fail(seq: number, m: Message, p: Pending, error: unknown): void {
    const msg = error instanceof Error ? error.message : String(error);
    if (p.deliveries >= this.maxDeliver) {
      this.c.settle(seq);
      this.c.bus.deadLetter(this.c.name, m, `max_deliver: gave up after ${p.deliveries} deliveries: ${msg}`, null);
      return;
    }
    this.c.bus.logger.debug('handler failed; will redeliver', { consumer: this.c.name, msgId: m.msgId, deliveries: p.deliveries, err: error });
    this.c.retries.set(seq, Date.now() + backoffDelay(p.deliveries, this.opts.backoff?.initialMs, this.opts.backoff?.maxMs));
  }

  async drain(): Promise<void> {
    this.draining = true;
    if (this.inflight > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
    this.c.subs.delete(this);
    this.c.idle();
  }

  async lag(): Promise<number> {
    return this.c.lag();
  }
}
