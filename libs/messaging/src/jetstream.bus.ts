import { connect } from '@nats-io/transport-node';
import { nanos, type NatsConnection } from './nats-compat';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  StorageType,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { RstarError, type EventType, type RstarEvent } from '@rstar/contracts';
import type { EventSigner, EventVerifier, NatsAuth, NatsClientTls } from '@rstar/security';
import { createLogger, type Logger } from '@rstar/telemetry';
import type { BatchSubscribeOptions, BatchSubscriber, EventBus, RawPublisher, SubscribeOptions, Subscription } from './bus.port';
import { JetStreamBatchSubscription } from './jetstream-batch.subscription';
import { JetStreamPublisher } from './jetstream.publisher';
import { backoffDelay, delay } from './backoff';
import { PULL_EXPIRES_MS } from './pull.expires';
import { deadLetterEvent, deliver, logDeadLetter } from './delivery';
import { busSubjectOf, toBusSubject, toContractSubject } from './subjects';
import { BusClosedError } from './in-process.bus';
import { stampTraceparent } from './trace.propagation';
import { natsSecurityConnectOptions } from './nats-security.options';
import { BusOptionError, BusWaitTimeoutError, isConsumerNotFound, isStreamNotFound } from './bus.errors';
import { consumerLagGauge } from './consumer-lag.gauge';
import { dedupeId, eventIdOfMsgId } from './dedupe-id';

/**
 * The stream is not there and this client may not create it (secured mode: only the control plane
 * manages the stream). Retried by the caller until the control plane has created it.
 */
export class StreamMissingError extends RstarError {
  constructor(stream: string) {
    super('stream_missing', `stream ${stream} does not exist yet; in secured mode the control plane creates it (start control-plane, or run \`rstar security provision-stream\` as it)`, 'RSTAR_STREAM');
  }
}

export interface JetStreamBusOptions {
  /** NATS server URL(s), e.g. `nats://127.0.0.1:4222`; a string may list several, comma-separated (a cluster). */
  servers: string | string[];
  /** Stream name (default `RSTAR`). */
  stream?: string;
  /** Subject prefix (default `rstar`); the stream captures `<prefix>.>`. */
  subjectPrefix?: string;
  /** Connection name shown by the server (default `rstar`). */
  name?: string;
  /**
   * Copies of the stream kept by a NATS cluster (1..5; 3 survives losing one node). Set: the stream is
   * created with it and an existing stream with another count is updated to it. Unset: a new stream gets
   * one copy and an existing stream is left as it is (a client never scales down what services set up).
   */
  replicas?: number;
  /**
   * Upper bound of the stream's size in bytes (each replica holds a full copy): past it the oldest
   * messages are dropped. The archive is the record and the stream its buffer, so this bounds how far the
   * archiver may fall behind (docs/deploy.md sizes it). Set: applied at create and update. Unset: no limit
   * on a new stream, an existing stream's limit left alone.
   */
  maxBytes?: number;
  /** Give up a publish after retrying this long, in ms (default 120 s, the duplicate window). */
  publishDeadlineMs?: number;
  /** Publishes in flight at once for an array publish (default 256). */
  publishWindow?: number;
  /** Credentials of a secured NATS (nkey, user/password or JWT creds); none = an open server. */
  auth?: NatsAuth | null;
  /** TLS for the client connection (required when given). */
  tls?: NatsClientTls | null;
  /** Inbox prefix the client's subscribe permission allows (`_INBOX_<principal>`); default `_INBOX`. */
  inboxPrefix?: string | null;
  /**
   * Create or update the stream at connect (default true). False in secured mode for every service but the
   * control plane: the stream must exist, else connect throws {@link StreamMissingError}.
   */
  manageStream?: boolean;
  /** Sign every published event with this producer's key (`meta.signature`). */
  signer?: EventSigner | null;
  /** Refuse (dead-letter) delivered events of the verifier's required types that are unsigned or wrongly signed. */
  verifier?: EventVerifier | null;
  logger?: Logger;
}


/**
 * {@link EventBus} on NATS JetStream (docs/design/architecture.md §4). At {@link JetStreamBus.connect} it ensures
 * the stream (file storage, subjects `<prefix>.>`, 2 min duplicate window, `replicas` copies on a
 * cluster; durable consumers inherit the stream's replica count). `publish` sets
 * `Nats-Msg-Id` = subject, event id and content digest ({@link dedupeId}) and the W3C `traceparent` (header and `meta.traceparent`, see
 * {@link stampTraceparent}), awaits the publish ack, and retries with
 * backoff while the server is unreachable (the msg id makes a retried publish a no-op). Each
 * subscription is a durable pull consumer with explicit ack; because nats-server 2.9 allows one filter
 * subject per consumer, a subscription to one subject filters on it and any other filters on
 * `<prefix>.>` and skips other types client-side.
 */
export class JetStreamBus implements EventBus, RawPublisher, BatchSubscriber {
  readonly prefix: string;
  readonly stream: string;
  private readonly subs = new Set<{ drain(): Promise<void> }>();
  private closed = false;
  private readonly publisher: JetStreamPublisher;

  private constructor(
    readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    private readonly opts: JetStreamBusOptions,
    readonly log: Logger,
  ) {
    this.prefix = opts.subjectPrefix ?? 'rstar';
    this.stream = opts.stream ?? 'RSTAR';
    this.publisher = new JetStreamPublisher(nc, { deadlineMs: opts.publishDeadlineMs, log, inboxPrefix: opts.inboxPrefix ?? undefined });
  }

  /** The verifier delivered events are checked with (secured mode), or null. */
  get verifier(): EventVerifier | null {
    return this.opts.verifier ?? null;
  }

  /**
   * Connect (reconnecting forever afterwards) and ensure the stream exists (`manageStream`, the default), or
   * check that it does (@throws StreamMissingError).
   */
  static async connect(opts: JetStreamBusOptions): Promise<JetStreamBus> {
    if (!opts.servers || (Array.isArray(opts.servers) && !opts.servers.length)) {
      throw new BusOptionError('servers', 'JetStreamBus: option "servers" is required (e.g. nats://127.0.0.1:4222)');
    }
    const log = opts.logger ?? createLogger('jetstream-bus');
    const servers = (Array.isArray(opts.servers) ? opts.servers : opts.servers.split(',')).map((s) => s.trim()).filter(Boolean);
    const nc = await connect({
      servers,
      name: opts.name ?? 'rstar',
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      // An Error (with a stack trace) per request costs ~25 µs per publish; publish errors name the event id anyway.
      noAsyncTraces: true,
      ...natsSecurityConnectOptions(opts),
    });
    try {
      const jsm = await jetstreamManager(nc);
      const bus = new JetStreamBus(nc, jetstream(nc, { timeout: 5_000 }), jsm, opts, log);
      if (opts.manageStream === false) await bus.requireStream();
      else await bus.ensureStream();
      return bus;
    } catch (e) {
      await nc.close().catch(() => undefined);
      throw e;
    }
  }

  private async requireStream(): Promise<void> {
    try {
      await this.jsm.streams.info(this.stream);
    } catch (e) {
      if (isStreamNotFound(e)) throw new StreamMissingError(this.stream);
      throw e;
    }
  }

  private async ensureStream(): Promise<void> {
    const subject = `${this.prefix}.>`;
    const replicas = this.opts.replicas;
    if (replicas !== undefined && !(Number.isInteger(replicas) && replicas >= 1 && replicas <= 5)) {
      throw new BusOptionError('replicas', `JetStreamBus: option "replicas" must be an integer 1..5 (NATS's limit), got ${replicas}`);
    }
    const maxBytes = this.opts.maxBytes;
    if (maxBytes !== undefined && !(Number.isSafeInteger(maxBytes) && maxBytes > 0)) {
      throw new BusOptionError('maxBytes', `JetStreamBus: option "maxBytes" must be a positive integer of bytes, got ${maxBytes}`);
    }
    try {
      const info = await this.jsm.streams.info(this.stream);
      const update: { subjects?: string[]; num_replicas?: number; max_bytes?: number } = {};
      if (!info.config.subjects?.includes(subject)) update.subjects = [...(info.config.subjects ?? []), subject];
      if (replicas !== undefined && info.config.num_replicas !== replicas) {
        this.log.info('changing the stream\'s replicas', { stream: this.stream, from: info.config.num_replicas, to: replicas });
        update.num_replicas = replicas;
      }
      if (maxBytes !== undefined && info.config.max_bytes !== maxBytes) update.max_bytes = maxBytes;
      if (update.subjects || update.num_replicas || update.max_bytes) await this.jsm.streams.update(this.stream, update);
    } catch (e) {
      if (!isStreamNotFound(e)) throw e;
      await this.jsm.streams.add({
        name: this.stream,
        subjects: [subject],
        storage: StorageType.File,
        duplicate_window: nanos(120_000),
        num_replicas: replicas ?? 1,
        ...(maxBytes !== undefined ? { max_bytes: maxBytes } : {}),
      });
    }
  }

  async publish(events: RstarEvent | readonly RstarEvent[]): Promise<void> {
    const given = (Array.isArray(events) ? events : [events]) as readonly RstarEvent[];
    // The trace context is stamped before signing: the signature covers meta.traceparent too.
    for (const e of given) stampTraceparent(e);
    const list = this.opts.signer ? this.opts.signer.sign(given) : given;
    const window = this.opts.publishWindow ?? 256;
    let next = 0;
    const worker = async () => {
      while (next < list.length) {
        const e = list[next++];
        const subject = busSubjectOf(this.prefix, e.type as EventType);
        await this.publishOne(subject, JSON.stringify(e), dedupeId(subject, e), e.meta.traceparent);
      }
    };
    await Promise.all(Array.from({ length: Math.min(window, list.length) }, worker));
  }

  async publishRaw(subject: string, payload: string | Uint8Array, msgId?: string): Promise<void> {
    await this.publishOne(toBusSubject(this.prefix, subject), payload, msgId ?? null, null);
  }

  private publishOne(subject: string, payload: string | Uint8Array, msgId: string | null, traceparent: string | null): Promise<void> {
    if (this.closed) return Promise.reject(new BusClosedError());
    return this.publisher.publish(subject, payload, msgId, traceparent);
  }

  async subscribe<T extends EventType>(opts: SubscribeOptions<T>): Promise<Subscription> {
    if (this.closed) throw new BusClosedError();
    if (!opts.durable || !/^[A-Za-z0-9_-]+$/.test(opts.durable)) {
      throw new BusOptionError('durable', `subscribe: option "durable" must be a name of letters, digits, "_" or "-", got "${opts.durable}"`);
    }
    const subjects = [...new Set(opts.types.map((t) => busSubjectOf(this.prefix, t)))];
    if (!subjects.length && !opts.allSubjects) throw new BusOptionError('types', 'subscribe: option "types" must name at least one event type');
    const filter = subjects.length === 1 && !opts.allSubjects ? subjects[0] : `${this.prefix}.>`;
    const concurrency = Math.max(1, opts.concurrency ?? 16);
    await this.ensureConsumer(opts.durable, filter, opts.from, opts.ackWaitMs, Math.max(concurrency * 2, 256));
    const consumer = await this.js.consumers.get(this.stream, opts.durable);
    const messages = await consumer.consume({ max_messages: Math.min(concurrency * 2, 1024), expires: PULL_EXPIRES_MS });
    const sub = new JetStreamSubscription(this, opts, messages, concurrency);
    this.subs.add(sub);
    sub.run().finally(() => this.subs.delete(sub));
    return sub;
  }

  /**
   * Consume every subject under the prefix in batches (the archiver's path, {@link BatchSubscriber}):
   * messages are parsed once, invalid ones dead-lettered, valid ones handed over in batches of up to
   * `maxBatch`, and acked (explicitly, message by message, without awaiting) after the handler resolves.
   */
  async subscribeBatches(opts: BatchSubscribeOptions): Promise<Subscription> {
    if (this.closed) throw new BusClosedError();
    if (!opts.durable || !/^[A-Za-z0-9_-]+$/.test(opts.durable)) {
      throw new BusOptionError('durable', `subscribeBatches: option "durable" must be a name of letters, digits, "_" or "-", got "${opts.durable}"`);
    }
    if (!Number.isInteger(opts.maxBatch) || opts.maxBatch < 1) {
      throw new BusOptionError('maxBatch', `subscribeBatches: option "maxBatch" must be a positive integer, got ${opts.maxBatch}`);
    }
    const inflight = Math.max(1, opts.inflight ?? 2);
    // The server's unacked limit is the backpressure: the batches in flight, the one filling, and one more in the pipe.
    const maxAckPending = Math.max(opts.maxBatch * (inflight + 2), 256);
    await this.ensureConsumer(opts.durable, `${this.prefix}.>`, opts.from, opts.ackWaitMs, maxAckPending);
    const consumer = await this.js.consumers.get(this.stream, opts.durable);
    const sub = new JetStreamBatchSubscription(this, consumer, opts, inflight, Math.min(maxAckPending, 4096));
    await sub.start();
    this.subs.add(sub);
    sub.done.finally(() => this.subs.delete(sub));
    return sub;
  }

  /** Create the durable pull consumer, or update the settings an existing one may change. */
  private async ensureConsumer(durable: string, filter: string, from: 'new' | 'all' | undefined, ackWaitMs: number | undefined, maxAckPending: number): Promise<void> {
    const config = {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: from === 'all' ? DeliverPolicy.All : DeliverPolicy.New,
      filter_subject: filter,
      ack_wait: nanos(ackWaitMs ?? 30_000),
      max_ack_pending: maxAckPending,
      max_deliver: -1,
    };
    try {
      const info = await this.jsm.consumers.info(this.stream, durable);
      if (info.config.filter_subject !== filter || info.config.ack_wait !== config.ack_wait || info.config.max_ack_pending !== config.max_ack_pending) {
        await this.jsm.consumers.update(this.stream, durable, {
          filter_subject: filter,
          ack_wait: config.ack_wait,
          max_ack_pending: config.max_ack_pending,
        });
      }
    } catch (e) {
      if (!isConsumerNotFound(e)) throw e;
      await this.jsm.consumers.add(this.stream, config);
    }
  }

  /**
   * Which of these durable consumers do not exist on the stream yet. A new durable starts at new messages,
   * so work published before a service first subscribed would never reach it: whoever starts work (the CLI
   * submitting a run, the step driver starting one) first waits until the consumers of the pipeline exist.
   */
  async missingConsumers(names: readonly string[]): Promise<string[]> {
    const missing: string[] = [];
    for (const name of names) {
      try {
        await this.jsm.consumers.info(this.stream, name);
      } catch (e) {
        // A stream that is not there yet has none of the consumers either.
        if (!isConsumerNotFound(e) && !isStreamNotFound(e)) throw e;
        missing.push(name);
      }
    }
    return missing;
  }

  /**
   * Resolves once durable consumer `durable` has acked every message the stream held when this was
   * called (its ack floor reached the stream's last sequence). A reader that rebuilds state from the
   * archive calls it with the archiver's durable first: events its own consumer acked before a restart
   * may still be on their way to Postgres (an archiver behind after a Postgres restart), and reading
   * before they land would lose them. Polls with backoff (250 ms doubling to 1 s: two small JetStream API
   * requests a second at most, and a reader resumes within a second of the archiver catching up, where a 5 s
   * cap made a restarted reader idle up to 5 s longer) while the consumer is behind, missing, or the cluster
   * cannot answer; `onWait` is called on each wait with the reason.
   * With `resolveIfMissing`, a durable the stream does not have (the stream answered, the consumer is not
   * found) counts as caught up: no such consumer ever ran here, so nothing of it is on its way anywhere
   * (a reader started before the archiver's first start must not wait for it forever).
   * @throws BusWaitTimeoutError after `timeoutMs` (default: no limit), naming the consumer and how far it got.
   */
  async waitForConsumer(durable: string, opts: { timeoutMs?: number; onWait?: (reason: string) => void; resolveIfMissing?: boolean } = {}): Promise<void> {
    const t0 = Date.now();
    let target: number | null = null;
    for (let attempt = 1; ; attempt++) {
      let reason: string;
      try {
        target ??= (await this.jsm.streams.info(this.stream)).state.last_seq;
        const info = await this.jsm.consumers.info(this.stream, durable).catch((e: Error) => {
          if (opts.resolveIfMissing && isConsumerNotFound(e)) return null;
          throw e;
        });
        if (info === null) return;
        // Past the target, or nothing left to deliver or ack (a filtered consumer's ack floor stops at the
        // last message it matches, which may sit below the stream's last sequence).
        if (info.ack_floor.stream_seq >= target || (info.num_pending === 0 && info.num_ack_pending === 0)) return;
        reason = `consumer ${durable} has acked up to stream sequence ${info.ack_floor.stream_seq} of ${target}`;
      } catch (e) {
        reason = `consumer ${durable} not readable yet: ${(e as Error).message}`;
      }
      if (opts.timeoutMs !== undefined && Date.now() - t0 > opts.timeoutMs) throw new BusWaitTimeoutError(`waited ${opts.timeoutMs} ms for ${reason}`);
      opts.onWait?.(reason);
      await delay(backoffDelay(attempt, 250, 1_000));
    }
  }

  /** @internal Publish the dead letter, then the caller terms the message. */
  async deadLetter(consumer: string, m: JsMsg, reason: string, field: string | null): Promise<void> {
    const subject = toContractSubject(this.prefix, m.subject);
    const header = m.headers?.get('Nats-Msg-Id');
    // The event id for people (the header also carries the subject and the content digest, see dedupeId).
    const msgId = header ? eventIdOfMsgId(header) : `seq-${m.seq}`;
    logDeadLetter(this.log, consumer, subject, msgId, reason, field);
    await this.publish(deadLetterEvent({ consumer, subject, msgId, payload: m.data, reason, field }));
  }

  /** Drain every subscription and close the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.all([...this.subs].map((s) => s.drain()));
    this.closed = true;
    await this.publisher.idle(5_000);
    this.publisher.close();
    await this.nc.drain().catch(() => this.nc.close());
  }
}

class JetStreamSubscription implements Subscription {
  private inflight = 0;
  private draining = false;
  private slotWaiters: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];
  private done: Promise<void> | null = null;
  private readonly types: Set<string>;
  private readonly lagTimer: NodeJS.Timeout;

  constructor(
    private readonly bus: JetStreamBus,
    private readonly opts: SubscribeOptions<any>,
    private readonly messages: ConsumerMessages,
    private readonly concurrency: number,
  ) {
    this.types = new Set(opts.types);
    this.lagTimer = setInterval(() => void this.lag().catch(() => undefined), 10_000);
    this.lagTimer.unref();
  }

  run(): Promise<void> {
    this.done = (async () => {
      for await (const m of this.messages) {
        if (this.draining) {
          m.nak();
          continue;
        }
        while (this.inflight >= this.concurrency) await new Promise<void>((r) => this.slotWaiters.push(r));
        this.inflight++;
        void this.handle(m).finally(() => {
          this.inflight--;
          this.slotWaiters.shift()?.();
          if (this.inflight === 0) this.idleWaiters.splice(0).forEach((r) => r());
        });
      }
    })().catch((e) => this.bus.log.error('consumer loop stopped', { consumer: this.opts.durable, err: e }));
    return this.done;
  }

  private async handle(m: JsMsg): Promise<void> {
    const name = this.opts.durable;
    const maxDeliver = Math.max(1, this.opts.maxDeliver ?? 20);
    const count = m.info.deliveryCount;
    try {
      if (count > maxDeliver) {
        await this.bus.deadLetter(name, m, `max_deliver: gave up after ${count - 1} deliveries`, null);
        m.term();
        return;
      }
      const outcome = await deliver(
        m.data,
        this.types,
        this.opts.handler,
        { subject: m.subject, deliveryCount: count, working: () => m.working() },
        name,
        this.bus.verifier,
        this.bus.prefix,
      );
      if (outcome.kind === 'ack') m.ack();
      else if (outcome.kind === 'dead') {
        await this.bus.deadLetter(name, m, outcome.reason, outcome.field);
        // No reason text: nats-server 2.9 ignores '+TERM <reason>' (added in 2.10), leaving the message pending.
        m.term();
      } else if (count >= maxDeliver) {
        const msg = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
        await this.bus.deadLetter(name, m, `max_deliver: gave up after ${count} deliveries: ${msg}`, null);
        m.term();
      } else {
        this.bus.log.debug('handler failed; nak with backoff', { consumer: name, seq: m.seq, count, err: outcome.error });
        m.nak(backoffDelay(count, this.opts.backoff?.initialMs, this.opts.backoff?.maxMs));
      }
    } catch (e) {
      // The dead letter could not be published (server down): let JetStream redeliver later.
      this.bus.log.warn('could not settle message; it will be redelivered', { consumer: name, seq: m.seq, err: e });
      try {
        m.nak(backoffDelay(count, 500, 5_000));
      } catch {
        // connection gone: ack wait expiry redelivers it
      }
    }
  }

  async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    clearInterval(this.lagTimer);
    if (this.inflight > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
    await this.messages.close().catch(() => undefined);
    this.slotWaiters.splice(0).forEach((r) => r());
    await this.done;
  }

  async lag(): Promise<number> {
    const info = await this.bus.jsm.consumers.info(this.bus.stream, this.opts.durable);
    const n = info.num_pending + info.num_ack_pending;
    consumerLagGauge().set({ consumer: this.opts.durable }, n);
    return n;
  }
}
