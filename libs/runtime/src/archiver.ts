import type { RstarEvent } from '@rstar/contracts';
import type { AppendResult, EventStore } from '@rstar/event-store';
import { counter, createLogger, type Logger } from '@rstar/telemetry';
import { isBatchSubscriber, TransientError, type EventBus, type Subscription, ALL_EVENT_TYPES } from '@rstar/messaging';

export interface ArchiverOptions {
  /** Durable consumer name (default `archiver`). */
  durable?: string;
  /** Events per append (default 500). */
  batchSize?: number;
  /** Longest an event waits for its batch to fill, in ms (default 20). */
  maxWaitMs?: number;
  /** Ack deadline before the bus redelivers (e.g. after this process died), in ms (default 30 s). */
  ackWaitMs?: number;
  logger?: Logger;
  /**
   * The key the archiver signs its chain checkpoints with (the control plane's, in secured mode); null =
   * unsigned checkpoints (they still catch a cut tail, but not a forger who may insert rows).
   */
  signer?: Parameters<EventStore['checkpoints']['write']>[2];
  /** A checkpoint of a run's chain after this many of its events (default 1000), and a sealed one when it ends. */
  checkpointEvery?: number;
}

interface Waiting {
  event: RstarEvent;
  resolve: () => void;
  reject: (e: unknown) => void;
}

const archivedTotal = () => counter('rstar_archiver_events_total', 'Events appended to the archive', ['result']);

/**
 * The event archiver (docs/design/architecture.md §4): consumes every subject of the bus from the start of the
 * stream, appends in batches of up to `batchSize` with one `EventStore.appendBatch` (COPY on real
 * Postgres, `unnest` on PGlite), and acks each message only
 * after its batch committed. A failed append rejects the whole batch with {@link TransientError}, so
 * its messages are redelivered; `ON CONFLICT (id) DO NOTHING` drops the copies of any that did commit
 * (e.g. after a crash between commit and ack). Invalid payloads, and events refused by the bus's
 * admission check (a type on another type's subject, a bad or missing signature) are dead-lettered by the
 * bus; their `DeadLettered` events go to the quarantine table, outside the runs' chains, and an id
 * already archived with different content is logged as an ID COLLISION error and quarantined too.
 */
export class Archiver {
  private sub: Subscription | null = null;
  private buffer: Waiting[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The wait timer fired while two appends were in flight: flush when one of them commits. */
  private due = false;
  private readonly inflight = new Set<Promise<void>>();
  /** Appends started and not yet settled, in the order the bus handed out their events, with their streams. */
  private readonly appending: { streams: ReadonlySet<string>; settled: Promise<boolean> }[] = [];
  private readonly durable: string;
  private readonly batchSize: number;
  private readonly maxWaitMs: number;
  private readonly ackWaitMs: number | undefined;
  private readonly log: Logger;
  /** Counters since start: events newly stored, duplicates dropped, batches committed. */
  readonly stats = { archived: 0, duplicates: 0, batches: 0, quarantined: 0, checkpoints: 0 };
  /** Events archived per run since its last checkpoint. */
  private readonly sinceCheckpoint = new Map<string, number>();
  /** Runs this archiver sealed: a late event of one (archived after its end) gets a new sealed checkpoint. */
  private readonly sealed = new Set<string>();
  private checkpointing: Promise<void> = Promise.resolve();
  private readonly signer: ArchiverOptions['signer'];
  private readonly checkpointEvery: number;

  constructor(
    private readonly bus: EventBus,
    private readonly store: EventStore,
    opts: ArchiverOptions = {},
  ) {
    this.durable = opts.durable ?? 'archiver';
    this.batchSize = opts.batchSize ?? 500;
    this.maxWaitMs = opts.maxWaitMs ?? 20;
    this.ackWaitMs = opts.ackWaitMs;
    this.log = opts.logger ?? createLogger('archiver');
    this.signer = opts.signer ?? null;
    this.checkpointEvery = opts.checkpointEvery ?? 1000;
  }

  /**
   * Subscribe (idempotent). The in-flight window is two batches so one fills while the other commits.
   * On a bus that hands out whole batches (JetStream, {@link BatchSubscriber}) the archiver takes them
   * as they come (one parse per message, no promise per message, acks after the commit); otherwise it
   * assembles batches from per-event deliveries.
   */
  async start(): Promise<void> {
    if (this.sub) return;
    if (isBatchSubscriber(this.bus)) {
      this.sub = await this.bus.subscribeBatches({
        durable: this.durable,
        from: 'all',
        maxBatch: this.batchSize,
        maxWaitMs: this.maxWaitMs,
        inflight: 2,
        backoff: { initialMs: 100, maxMs: 5_000 },
        maxDeliver: 1_000,
        ackWaitMs: this.ackWaitMs,
        handler: (events) => this.append(events),
      });
      this.log.info('archiver started', { durable: this.durable, batchSize: this.batchSize, batches: true });
      return;
    }
    this.sub = await this.bus.subscribe({
      durable: this.durable,
      types: ALL_EVENT_TYPES,
      allSubjects: true,
      from: 'all',
      concurrency: this.batchSize * 2,
      backoff: { initialMs: 100, maxMs: 5_000 },
      maxDeliver: 1_000,
      ackWaitMs: this.ackWaitMs,
      handler: (event) => this.enqueue(event),
    });
    this.log.info('archiver started', { durable: this.durable, batchSize: this.batchSize });
  }

  /** Messages not yet archived and acked. */
  async lag(): Promise<number> {
    return this.sub ? this.sub.lag() : 0;
  }

  /** Stop consuming; in-flight batches are committed and acked first. */
  async stop(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    if (!sub) return;
    const draining = sub.drain();
    this.flush();
    await draining;
    await Promise.allSettled([...this.inflight]);
  }

  private enqueue(event: RstarEvent): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.buffer.push({ event, resolve, reject });
      if (this.buffer.length >= this.batchSize) this.flush();
      else if (!this.timer && !this.due) this.timer = setTimeout(() => this.onTimer(), this.maxWaitMs);
    });
  }

  // Group commit: a partial batch goes out after maxWaitMs only when an append slot is free; otherwise it
  // keeps filling until an append commits, so batches stay large when the database is the bottleneck.
  private onTimer(): void {
    this.timer = null;
    if (this.inflight.size < 2) this.flush();
    else this.due = true;
  }

  private flush(): void {
    this.due = false;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (!this.buffer.length) return;
    const batch = this.buffer;
    this.buffer = [];
    const p = this.append(batch.map((w) => w.event))
      .then(() => batch.forEach((w) => w.resolve()))
      .catch((err) => batch.forEach((w) => w.reject(err)))
      .finally(() => {
        this.inflight.delete(p);
        if (this.due && this.buffer.length) this.flush();
      });
    this.inflight.add(p);
  }

  /**
   * Append one batch and count it; a failure becomes a {@link TransientError} so the batch is redelivered.
   * The append itself goes through {@link commitInOrder}; the chain checkpoints follow it.
   */
  private async append(events: RstarEvent[]): Promise<void> {
    const r = await this.commitInOrder(events);
    this.stats.archived += r.appended;
    this.stats.duplicates += r.duplicates;
    this.stats.quarantined += r.quarantined + r.collisions.length;
    // An id taken by different content is an alarm (someone squatted an id or rewrote an event), never a silent drop.
    for (const c of r.collisions) this.log.error(`ID COLLISION: ${c.reason}; the new copy is kept in the quarantine table, not in the run`, { eventId: c.id });
    this.stats.batches += 1;
    archivedTotal().inc({ result: 'appended' }, r.appended);
    if (r.duplicates) archivedTotal().inc({ result: 'duplicate' }, r.duplicates);
    if (r.quarantined) archivedTotal().inc({ result: 'dead_letter' }, r.quarantined);
    if (r.collisions.length) archivedTotal().inc({ result: 'id_collision' }, r.collisions.length);
    await this.checkpoint(events);
  }

  /**
   * `store.appendBatch(events)`, never ahead of an earlier batch that writes one of the same streams. Two
   * batches are in flight at once; without this the later one could take the streams' locks first, and the
   * archive would hold a stream's events out of the bus's order and, for an id squatted inside the bus's
   * duplicate window, the later copy as the event and the earlier one as the collision. Only the commit
   * waits (not the earlier batch's checkpoint). When the earlier batch failed (it is redelivered), this one
   * fails too, so that both come back in order. @throws TransientError
   */
  private async commitInOrder(events: RstarEvent[]): Promise<AppendResult> {
    const streams = new Set(events.map((e) => e.streamId));
    const earlier = this.appending.filter((a) => [...streams].some((s) => a.streams.has(s))).map((a) => a.settled);
    let settle!: (ok: boolean) => void;
    const entry = { streams, settled: new Promise<boolean>((r) => (settle = r)) };
    this.appending.push(entry);
    let ok = false;
    try {
      if (earlier.length && !(await Promise.all(earlier)).every(Boolean)) {
        throw new TransientError('an earlier batch over the same streams failed; this one is redelivered after it, in stream order');
      }
      try {
        const r = await this.store.appendBatch(events);
        ok = true;
        return r;
      } catch (e) {
        this.log.warn('append failed; the batch will be redelivered', { events: events.length, err: e });
        throw new TransientError(`archive append failed: ${(e as Error).message}`, e);
      }
    } finally {
      this.appending.splice(this.appending.indexOf(entry), 1);
      settle(ok);
    }
  }

  /**
   * Sign a checkpoint of each run of the batch whose events since its last one reached `checkpointEvery`,
   * and a sealed one of each run the batch ended (`RunCompleted`/`RunFailed`): from then on nothing may
   * follow in its chain, and a cut tail or a rewritten head no longer verifies. A failure fails the batch
   * (redelivered; the appends it repeats are dropped as duplicates and the checkpoint is written then).
   */
  private checkpoint(events: readonly RstarEvent[]): Promise<void> {
    // Two batches commit concurrently: their checkpoints are written one after the other, in commit order.
    const next = this.checkpointing.then(() => this.writeCheckpoints(events));
    this.checkpointing = next.catch(() => undefined);
    return next;
  }

  private async writeCheckpoints(events: readonly RstarEvent[]): Promise<void> {
    const ended = new Set<string>();
    for (const e of events) {
      if (e.type === 'DeadLettered') continue;
      this.sinceCheckpoint.set(e.runId, (this.sinceCheckpoint.get(e.runId) ?? 0) + 1);
      if (e.type === 'RunCompleted' || e.type === 'RunFailed' || this.sealed.has(e.runId)) ended.add(e.runId);
    }
    for (const [runId, n] of this.sinceCheckpoint) {
      if (!ended.has(runId) && n < this.checkpointEvery) continue;
      try {
        await this.store.checkpoints.write(runId, ended.has(runId), this.signer ?? null);
      } catch (e) {
        throw new TransientError(`chain checkpoint of run ${runId} failed: ${(e as Error).message}`, e);
      }
      this.sinceCheckpoint.delete(runId);
      if (ended.has(runId)) this.sealed.add(runId);
      this.stats.checkpoints++;
    }
  }
}
