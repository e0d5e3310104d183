import { RstarError } from '@rstar/contracts';
import * as transport from '@nats-io/transport-node';
import type { Logger } from '@rstar/telemetry';
import { backoffDelay } from './backoff';
import { BusClosedError } from './in-process.bus';
import { eventIdOfMsgId } from './dedupe-id';
import { natsHeaders, type NatsConnection } from './nats-compat';

/** A publish JetStream did not acknowledge before the deadline (the server stayed down or kept refusing). */
export class PublishTimeoutError extends RstarError {
  constructor(
    message: string,
    readonly eventId: string,
  ) {
    super('publish_timeout', message);
  }
}


/** NATS refused a publish: this client's user may not publish on the subject (a permissions violation). */
export class PublishDeniedError extends RstarError {
  constructor(
    readonly subject: string,
    readonly eventId: string,
  ) {
    super('publish_denied', `NATS refused the publish of ${eventId || '(no id)'} on ${subject}: this client's NATS user may not publish there (it may publish only the event types its principal produces, see @rstar/security BUS_ROLES)`, 'subject');
  }
}

/** A status event of the connection (nats.js `status()`), the fields read here. */
interface StatusEvent {
  type: string;
  error?: { name?: string; operation?: string; subject?: string; message?: string };
}

/** The parts of a core NATS message the ack handler reads. */
interface AckMsg {
  subject: string;
  headers?: { code?: number; description?: string };
  string(): string;
}

interface Pending {
  subject: string;
  payload: string | Uint8Array;
  headers: ReturnType<typeof natsHeaders>;
  msgId: string | null;
  attempt: number;
  sentAt: number;
  deadline: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

export interface JetStreamPublisherOptions {
  /** Resend a publish whose ack has not come after this long, in ms (default 5 s). */
  ackTimeoutMs?: number;
  /** Give up after retrying this long, in ms (default 120 s, the stream's duplicate window). */
  deadlineMs?: number;
  /** Prefix of the ack inbox (the connection's inbox prefix, which a secured user may subscribe to). */
  inboxPrefix?: string;
  log: Logger;
}

const createInbox = (transport as unknown as { createInbox: (prefix?: string) => string }).createInbox;

/**
 * JetStream publishing with many acks in flight at the cost of one core publish each. `js.publish`
 * is a request per message (a reply subscription entry, a timer and two Error objects each); here one
 * wildcard inbox subscription receives every PubAck, and one sweeper resends what is not acked within
 * `ackTimeoutMs`. A resend carries the same `Nats-Msg-Id`, so the stream's duplicate window drops the
 * copy when the first one was stored after all. Errors in the ack (e.g. no stream yet) and timeouts
 * (server down: the client buffers while it reconnects) retry with backoff until `deadlineMs`.
 */
export class JetStreamPublisher {
  private readonly inbox: string;
  private readonly pending = new Map<string, Pending>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly sub: { unsubscribe(): void };
  private seq = 0;
  private closed = false;
  private readonly ackTimeoutMs: number;
  private readonly deadlineMs: number;

  constructor(
    private readonly nc: NatsConnection,
    private readonly opts: JetStreamPublisherOptions,
  ) {
    this.inbox = createInbox(opts.inboxPrefix);
    this.ackTimeoutMs = opts.ackTimeoutMs ?? 5_000;
    this.deadlineMs = opts.deadlineMs ?? 120_000;
    this.sub = nc.subscribe(`${this.inbox}.*`, { callback: (err: Error | null, msg: AckMsg) => (err ? undefined : this.onAck(msg)) });
    this.sweeper = setInterval(() => this.sweep(), Math.min(250, this.ackTimeoutMs));
    this.sweeper.unref();
    void this.watchPermissions();
  }

  /**
   * A publish the server refuses for permissions never gets an ack; the server says so asynchronously
   * (`-ERR 'Permissions Violation for Publish to "<subject>"'`). Every publish waiting on that subject is
   * rejected at once with {@link PublishDeniedError}, logged as an error, instead of being retried.
   */
  private async watchPermissions(): Promise<void> {
    const status = (this.nc as unknown as { status(): AsyncIterable<StatusEvent> }).status();
    for await (const s of status) {
      if (this.closed) return;
      const err = s.type === 'error' ? s.error : undefined;
      if (err?.name !== 'PermissionViolationError' || err.operation !== 'publish' || !err.subject) continue;
      for (const [token, p] of this.pending) {
        if (p.subject !== err.subject) continue;
        this.pending.delete(token);
        const denied = new PublishDeniedError(p.subject, eventIdOfMsgId(p.msgId));
        this.opts.log.error(denied.message, { subject: p.subject, msgId: p.msgId, code: denied.code });
        p.reject(denied);
      }
    }
  }

  /** Publish; resolves once JetStream acknowledged (stored or dropped as a duplicate). */
  publish(subject: string, payload: string | Uint8Array, msgId: string | null, traceparent: string | null): Promise<void> {
    if (this.closed) return Promise.reject(new BusClosedError());
    const headers = natsHeaders();
    if (msgId) headers.set('Nats-Msg-Id', msgId);
    if (traceparent) headers.set('traceparent', traceparent);
    return new Promise<void>((resolve, reject) => {
      this.send({ subject, payload, headers, msgId, attempt: 1, sentAt: 0, deadline: Date.now() + this.deadlineMs, resolve, reject });
    });
  }

  /** Resolves when no publish waits for its ack, or after `timeoutMs`. */
  async idle(timeoutMs: number): Promise<void> {
    const t0 = Date.now();
    while (this.pending.size && Date.now() - t0 < timeoutMs) await new Promise((r) => setTimeout(r, 10));
  }

  /** Stop: every publish still waiting is rejected with {@link BusClosedError}. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    for (const p of this.pending.values()) p.reject(new BusClosedError());
    this.pending.clear();
    try {
      this.sub.unsubscribe();
    } catch {
      // connection already closed
    }
  }

  private send(p: Pending): void {
    if (this.closed) return p.reject(new BusClosedError());
    const token = (++this.seq).toString(36);
    p.sentAt = Date.now();
    this.pending.set(token, p);
    try {
      this.nc.publish(p.subject, p.payload, { reply: `${this.inbox}.${token}`, headers: p.headers as never });
    } catch (e) {
      this.pending.delete(token);
      this.retry(p, e);
    }
  }

  private onAck(msg: AckMsg): void {
    const token = msg.subject.slice(this.inbox.length + 1);
    const p = this.pending.get(token);
    if (!p) return; // the ack of a copy already resent or settled
    this.pending.delete(token);
    // No responders (the stream is not there yet, or the server is restarting) arrives as a 503 status.
    if (msg.headers?.code && msg.headers.code >= 300) return this.retry(p, new Error(`status ${msg.headers.code} ${msg.headers.description ?? ''}`));
    let ack: { error?: { code?: number; description?: string } };
    try {
      ack = JSON.parse(msg.string());
    } catch (e) {
      return this.retry(p, e);
    }
    if (ack.error) return this.retry(p, new Error(`JetStream error ${ack.error.code}: ${ack.error.description}`));
    p.resolve();
  }

  private sweep(): void {
    const cutoff = Date.now() - this.ackTimeoutMs;
    for (const [token, p] of this.pending) {
      if (p.sentAt > cutoff) continue;
      this.pending.delete(token);
      this.retry(p, new Error(`no ack within ${this.ackTimeoutMs} ms`));
    }
  }

  private retry(p: Pending, err: unknown): void {
    if (this.closed) return p.reject(new BusClosedError());
    const msg = err instanceof Error ? err.message : String(err);
    if (Date.now() > p.deadline) {
      return p.reject(new PublishTimeoutError(`publish of ${p.msgId ? eventIdOfMsgId(p.msgId) : p.subject} not acked before the deadline: ${msg}`, eventIdOfMsgId(p.msgId)));
    }
    if (p.attempt === 1 || p.attempt % 20 === 0) {
      this.opts.log.warn('publish failed; retrying', { subject: p.subject, msgId: p.msgId, attempt: p.attempt, err: msg });
    }
    const wait = backoffDelay(p.attempt, 100, 2_000);
    p.attempt++;
    setTimeout(() => this.send(p), wait);
  }
}

