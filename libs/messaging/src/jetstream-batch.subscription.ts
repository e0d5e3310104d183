import type { Consumer, ConsumerMessages, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { RstarEvent } from '@rstar/contracts';
import type { EventVerifier } from '@rstar/security';
import type { BatchSubscribeOptions, Subscription } from './bus.port';
import { backoffDelay } from './backoff';
import { PULL_EXPIRES_MS } from './pull.expires';
import { admitEvent } from './admission';
import { parsePayload } from './delivery';
import type { Logger } from '@rstar/telemetry';
import { consumerLagGauge } from './consumer-lag.gauge';

/**
 * What a batch subscription needs from its bus (JetStreamBus implements it): a logger, the stream and
 * its manager (for the lag), and the dead-letter path. Narrow on purpose, so this file does not import
 * the bus that creates it.
 */
export interface JetStreamConsumerHost {
  readonly log: Logger;
  readonly stream: string;
  readonly jsm: Pick<JetStreamManager, 'consumers'>;
  /** The subject prefix, to check that an event's type belongs to the subject it arrived on. */
  readonly prefix: string;
  /** The verifier of producers' signatures (secured mode), or null. */
  readonly verifier: EventVerifier | null;
  /** Publish the dead letter of `m` (the caller then terms it). */
  deadLetter(consumer: string, m: JsMsg, reason: string, field: string | null): Promise<void>;
}

interface Pending {
  m: JsMsg;
  event: RstarEvent;
}

/**
 * A batch consumer on a JetStream durable pull consumer (created by `JetStreamBus.subscribeBatches`).
 * Messages arrive through the `consume` callback (no promise per message); each is parsed once, and
 * the valid ones fill a buffer that goes to the handler when it holds `maxBatch` events, or after
 * `maxWaitMs` when a handler slot is free (group commit: while every slot is busy the buffer keeps
 * filling, so batches grow when the handler is the bottleneck). The consumer's `max_ack_pending` is the
 * backpressure. Every message is acked only after the batch holding it was handled.
 */
export class JetStreamBatchSubscription implements Subscription {
  private messages: ConsumerMessages | null = null;
  private buffer: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private due = false;
  private inflight = 0;
  private draining = false;
  private readonly settling = new Set<Promise<void>>();
  private idleWaiters: Array<() => void> = [];
  private readonly lagTimer: NodeJS.Timeout;
  private readonly maxDeliver: number;
  done: Promise<void> = Promise.resolve();

  constructor(
    private readonly bus: JetStreamConsumerHost,
    private readonly consumer: Consumer,
    private readonly opts: BatchSubscribeOptions,
    private readonly slots: number,
    private readonly pull: number,
  ) {
    this.maxDeliver = Math.max(1, opts.maxDeliver ?? 20);
    this.lagTimer = setInterval(() => void this.lag().catch(() => undefined), 10_000);
    this.lagTimer.unref();
  }

  /** Start pulling (`pull` messages per request, refilled at the client's default threshold). */
  async start(): Promise<void> {
    this.messages = await this.consumer.consume({ max_messages: this.pull, expires: PULL_EXPIRES_MS, callback: (m) => this.onMessage(m) });
    this.done = this.messages.closed().then(
      () => undefined,
      (e) => this.bus.log.error('batch consumer stopped', { consumer: this.opts.durable, err: e }),
    );
  }

  private onMessage(m: JsMsg): void {
    if (this.draining) {
      m.nak();
      return;
    }
    const count = m.info.deliveryCount;
    if (count > this.maxDeliver) {
      this.deadLetter(m, `max_deliver: gave up after ${count - 1} deliveries`, null);
      return;
    }
    const parsed = parsePayload(m.data);
    if (!('event' in parsed)) {
      this.deadLetter(m, parsed.reason, parsed.field);
      return;
    }
    // Nothing is archived as genuine unless its type belongs to its subject and (secured) its producer signed it.
    const refused = admitEvent(parsed.event, () => JSON.parse(new TextDecoder().decode(m.data)), m.subject, this.bus.prefix, this.bus.verifier);
    if (refused) {
      this.deadLetter(m, refused.reason, refused.field);
      return;
    }
    this.buffer.push({ m, event: parsed.event });
    if (this.buffer.length >= this.opts.maxBatch) this.flush();
    else if (!this.timer && !this.due) this.timer = setTimeout(() => this.onTimer(), this.opts.maxWaitMs);
  }

  private onTimer(): void {
    this.timer = null;
    this.flush();
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (!this.buffer.length) return;
    if (this.inflight >= this.slots) {
      this.due = true;
      return;
    }
    this.due = false;
    const batch = this.buffer.splice(0, this.opts.maxBatch);
    this.inflight++;
    this.opts
      .handler(batch.map((p) => p.event))
      .then(
        () => {
          for (const p of batch) p.m.ack();
        },
        (e) => this.retry(batch, e),
      )
      .finally(() => {
        this.inflight--;
        if (this.buffer.length >= this.opts.maxBatch || ((this.due || this.draining) && this.buffer.length)) this.flush();
        else if (this.buffer.length && !this.timer) this.timer = setTimeout(() => this.onTimer(), this.opts.maxWaitMs);
        if (this.inflight === 0 && !this.buffer.length) this.idleWaiters.splice(0).forEach((r) => r());
      });
  }

  private retry(batch: Pending[], e: unknown): void {
    const name = this.opts.durable;
    this.bus.log.debug('batch handler failed; nak with backoff', { consumer: name, messages: batch.length, err: e });
    const msg = e instanceof Error ? e.message : String(e);
    for (const { m } of batch) {
      const count = m.info.deliveryCount;
      if (count >= this.maxDeliver) this.deadLetter(m, `max_deliver: gave up after ${count} deliveries: ${msg}`, null);
      else m.nak(backoffDelay(count, this.opts.backoff?.initialMs, this.opts.backoff?.maxMs));
    }
  }

  /** Publish the dead letter, then term; if that fails (server down) nak so JetStream redelivers later. */
  private deadLetter(m: JsMsg, reason: string, field: string | null): void {
    const p = this.bus
      .deadLetter(this.opts.durable, m, reason, field)
      .then(
        // No reason text: nats-server 2.9 ignores '+TERM <reason>' (added in 2.10), leaving the message pending.
        () => m.term(),
        (e) => {
          this.bus.log.warn('could not settle message; it will be redelivered', { consumer: this.opts.durable, seq: m.seq, err: e });
          try {
            m.nak(backoffDelay(m.info.deliveryCount, 500, 5_000));
          } catch {
            // connection gone: ack wait expiry redelivers it
          }
        },
      )
      .finally(() => this.settling.delete(p));
    this.settling.add(p);
  }

  /** Stop pulling, hand the buffered events to the handler, wait for every batch and dead letter. */
  async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    clearInterval(this.lagTimer);
    await this.messages?.close().catch(() => undefined);
    this.flush();
    if (this.inflight > 0 || this.buffer.length) await new Promise<void>((r) => this.idleWaiters.push(r));
    await Promise.allSettled([...this.settling]);
    await this.done;
  }

  async lag(): Promise<number> {
    const info = await this.bus.jsm.consumers.info(this.bus.stream, this.opts.durable);
    const n = info.num_pending + info.num_ack_pending;
    consumerLagGauge().set({ consumer: this.opts.durable }, n);
    return n;
  }
}
