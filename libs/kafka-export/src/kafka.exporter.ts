import { Kafka, logLevel, Partitioners, type Admin, type KafkaConfig, type Message, type Producer, type SASLOptions } from 'kafkajs';
import type { DataSource, QueryRunner } from 'typeorm';
import { parseEvent, RstarError } from '@rstar/contracts';
import { LogFollower } from '@rstar/event-store';
import { counter, createLogger, gauge, histogram, type Logger } from '@rstar/telemetry';
import { openExportPositions } from './export-positions.datasource';

/** A setting of the export is wrong; `field` names it. */
export class KafkaExportConfigError extends RstarError {
  constructor(message: string, field: string) {
    super('invalid_kafka_export_option', message, field);
  }
}

/**
 * The topic does not hold what the stored position says this exporter wrote there (another writer, a
 * deleted or re-partitioned topic, a restored database): exporting on would duplicate or reorder events.
 */
/** The exporter was stopped while it waited for another exporter's lock (nothing was exported). */
export class KafkaExportStoppedError extends RstarError {
  constructor() {
    super('kafka_export_stopped', 'stopped while waiting for the export lock (another exporter holds it)');
  }
}

export class KafkaExportInconsistentError extends RstarError {
  constructor(message: string) {
    super('kafka_export_inconsistent', message, 'topic');
  }
}

/** Options of {@link KafkaExporter}. */
export interface KafkaExportOptions {
  /** Postgres URL of the archive. */
  connectionString: string;
  /** The archive's schema (default `rstar`); the export position lives beside it. */
  schema?: string;
  /**
   * Create the position table when missing (default true); false for a role that may not (the control plane
   * with `RSTAR_DB_MIGRATE=false`): `rstar db migrate` creates it (see {@link openExportPositions}).
   */
  migrate?: boolean;
  /** Kafka bootstrap servers, `host:port`. */
  brokers: string[];
  /** One topic for every event, keyed by run id (default `rstar.events`). */
  topic?: string;
  /** Partitions when the exporter creates the topic (default 6); an existing topic keeps its own. */
  partitions?: number;
  /** Replication factor when the exporter creates the topic (default 1). */
  replicationFactor?: number;
  clientId?: string;
  /** TLS to the brokers (default off). */
  ssl?: boolean;
  /** SASL (`plain`, `scram-sha-256`, `scram-sha-512`) with username and password. */
  sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
  /** Events per produce request (default 500). */
  batchSize?: number;
  /** Wait after a partial batch (caught up), in ms (default 250): what arrives meanwhile goes out in one batch. */
  pollMs?: number;
  logger?: Logger;
}

interface Row {
  txid: string;
  position: number;
  runId: string;
  message: Message;
}

const exported = () => counter('rstar_kafka_export_events_total', 'Archived events produced to Kafka and acknowledged', ['topic']);
const lagGauge = () => gauge('rstar_kafka_export_lag_events', 'Archived events not exported to Kafka yet', ['topic']);
const failures = () => counter('rstar_kafka_export_failures_total', 'Export batches that failed (retried after reconciling with the topic)', ['topic']);
const batchSeconds = () => histogram('rstar_kafka_export_batch_seconds', 'Time to export one batch (read, produce, acknowledge, store position)', ['topic'], [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);

/**
 * Mirrors the event archive to one Kafka topic (docs/design/architecture.md §2 control-plane "Kafka export"), keyed by
 * run id, in archive order, exactly once per event across restarts (libs/kafka-export/README.md says why
 * one topic and how). Per batch: read the next events after the stored position (raw SQL, (transaction
 * id, global position) order, below the oldest transaction in flight), produce them with an idempotent
 * producer (acks from all in-sync replicas, one request in flight, so a partition holds them in order and
 * a retried request is not written twice), then store the new position together with the next offset of
 * every partition. After a crash between the acknowledgement and that update, or a failed produce whose
 * messages may be partly written, {@link reconcile} compares the partitions' high watermarks with the
 * stored offsets: the difference in a partition is how many of the next events of that partition are
 * already there, and they are skipped. Only one exporter per topic runs at a time (a Postgres advisory
 * lock); another waits as a standby.
 */
export class KafkaExporter {
  readonly topic: string;
  private readonly log: Logger;
  private readonly schema: string;
  private ds: DataSource | null = null;
  private lockRunner: QueryRunner | null = null;
  private kafka: Kafka;
  private producer: Producer | null = null;
  private admin: Admin | null = null;
  private partitions = 0;
  /** Next offset this exporter writes per partition (after the last acknowledged produce). */
  private offsets: number[] = [];
  /** Events of each partition, after the stored position, already in the topic (found by reconcile). */
  private skip: number[] = [];
  private position = { txid: '0', position: 0 };
  private readonly follower: LogFollower;
  private reconciled = false;

  constructor(private readonly opts: KafkaExportOptions) {
    if (!opts.brokers?.length) throw new KafkaExportConfigError('"brokers" must list at least one host:port (RSTAR_KAFKA_BROKERS)', 'brokers');
    for (const b of opts.brokers) {
      if (!/^[^\s:/]+:\d+$/.test(b)) throw new KafkaExportConfigError(`"brokers" entries must be host:port, got "${b}"`, 'brokers');
    }
    this.topic = opts.topic ?? 'rstar.events';
    if (!/^[A-Za-z0-9._-]{1,249}$/.test(this.topic)) throw new KafkaExportConfigError(`"topic" must be 1-249 letters, digits, ".", "_" or "-", got "${this.topic}"`, 'topic');
    const p = opts.partitions ?? 6;
    if (!Number.isInteger(p) || p < 1) throw new KafkaExportConfigError(`"partitions" must be a positive integer, got ${p}`, 'partitions');
    this.schema = opts.schema ?? 'rstar';
    this.log = opts.logger ?? createLogger('kafka-export');
    const cfg: KafkaConfig = {
      clientId: opts.clientId ?? 'rstar-kafka-export',
      brokers: opts.brokers,
      ssl: opts.ssl ?? false,
      sasl: opts.sasl as SASLOptions | undefined,
      logLevel: logLevel.NOTHING,
      retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 },
    };
    this.kafka = new Kafka(cfg);
    this.follower = new LogFollower({
      batch: async () => {
        if (!this.producer) await this.connect();
        return this.exportBatch();
      },
      batchSize: opts.batchSize ?? 500,
      pollMs: opts.pollMs ?? 250,
      refreshLag: async () => (this.ds ? this.lag() : undefined),
      onError: (e, attempt) => {
        if (attempt === 1 || attempt % 20 === 0) this.log.warn('kafka export failed; retrying', { topic: this.topic, attempt, err: e });
        if (e instanceof KafkaExportInconsistentError && /partitions|holds/.test(e.message)) this.log.error(e.message, { topic: this.topic });
      },
    });
  }

  /**
   * Connect to Postgres (migrating the position table), take the export lock (waiting while another
   * exporter holds it), connect to Kafka, create the topic when missing, and reconcile. Resolves once this
   * exporter is the one exporting.
   */
  async connect(): Promise<void> {
    this.ds ??= await openExportPositions({ connectionString: this.opts.connectionString, schema: this.schema, migrate: this.opts.migrate });
    await this.acquireLock();
    this.admin = this.kafka.admin();
    await this.admin.connect();
    await this.admin.createTopics({
      topics: [{ topic: this.topic, numPartitions: this.opts.partitions ?? 6, replicationFactor: this.opts.replicationFactor ?? 1 }],
      waitForLeaders: true,
    });
    const admin = this.admin;
    const meta = await retrying(() => admin.fetchTopicMetadata({ topics: [this.topic] }));
    this.partitions = meta.topics[0].partitions.length;
    await this.connectProducer();
    await this.reconcile();
  }

  /**
   * Load the stored position and offsets, read every partition's high watermark, and note per partition
   * how many of its next events are already in the topic (produced and acknowledged, position not yet
   * stored). @throws KafkaExportInconsistentError when the topic holds fewer messages than stored, or the
   * stored offsets name another partition count.
   */
  async reconcile(): Promise<void> {
    const stored = await this.loadPosition();
    // Right after the topic is created (or the broker restarted) metadata can lag: retriable errors are retried.
    const highs = await retrying(() => this.admin!.fetchTopicOffsets(this.topic));
    const high = new Array<number>(this.partitions).fill(0);
    for (const h of highs) high[h.partition] = Number(h.high);
    const keys = Object.keys(stored.offsets);
    if (keys.length && keys.length !== this.partitions) {
      throw new KafkaExportInconsistentError(
        `topic ${this.topic} has ${this.partitions} partitions but the stored export position has offsets for ${keys.length}; a re-partitioned topic would break the order per run: export to a new topic (RSTAR_KAFKA_TOPIC)`,
      );
    }
    this.position = { txid: stored.txid, position: stored.position };
    this.skip = high.map((h, p) => {
      const d = h - (stored.offsets[p] ?? 0);
      if (d < 0) {
        throw new KafkaExportInconsistentError(
          `partition ${p} of topic ${this.topic} holds ${h} messages but this exporter stored ${stored.offsets[p]} as written; was the topic deleted or truncated? export to a new topic or reset the row in ${this.schema}.kafka_export_positions`,
        );
      }
      return d;
    });
    this.offsets = high;
    const pending = this.skip.reduce((a, b) => a + b, 0);
    if (pending) this.log.warn('events produced before a crash or a failed produce are already in the topic; skipping them', { topic: this.topic, pending });
    this.reconciled = true;
  }

  /**
   * Export the next batch; resolves with the number of archive events it covered (0 when caught up). A
   * failure leaves the stored position as it was; the next call reconciles first.
   */
  async exportBatch(): Promise<number> {
    if (!this.reconciled) await this.reconcile();
    const t0 = performance.now();
    const rows = await this.readAfter(this.opts.batchSize ?? 500);
    if (!rows.length) return 0;
    const partitioner = Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from({ length: this.partitions }, (_, i) => ({ partitionId: i, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
    const messages: Message[] = [];
    const counts = new Array<number>(this.partitions).fill(0);
    let skipped = 0;
    for (const r of rows) {
      const p = partitioner({ topic: this.topic, partitionMetadata, message: { key: r.runId, value: null } });
      if (this.skip[p] > 0) {
        this.skip[p]--;
        skipped++;
        continue;
      }
      messages.push({ ...r.message, partition: p });
      counts[p]++;
    }
    try {
      if (messages.length) await this.producer!.send({ topic: this.topic, acks: -1, messages });
    } catch (e) {
      // Some of the batch may be in the topic: find out how much before producing again.
      this.reconciled = false;
      failures().inc({ topic: this.topic });
      await this.reconnectProducer();
      throw e;
    }
    const offsets = this.offsets.map((o, p) => o + counts[p]);
    const last = rows[rows.length - 1];
    const updated = await this.ds!.query(
      `UPDATE "${this.schema}".kafka_export_positions SET txid = $2, position = $3, events = events + $4, offsets = $5::jsonb, updated_at = now()
       WHERE topic = $1 AND txid = $6 AND position = $7`,
      [this.topic, last.txid, last.position, rows.length, JSON.stringify(Object.fromEntries(offsets.map((o, p) => [p, o]))), this.position.txid, this.position.position],
    );
    if (rowCount(updated) !== 1) {
      this.reconciled = false;
      throw new KafkaExportInconsistentError(`the export position of ${this.topic} moved under this exporter (another exporter without the lock?); reconciling`);
    }
    this.offsets = offsets;
    this.position = { txid: last.txid, position: last.position };
    exported().inc({ topic: this.topic }, rows.length);
    batchSeconds().observe({ topic: this.topic }, (performance.now() - t0) / 1000);
    if (skipped) this.log.info('skipped events already in the topic', { topic: this.topic, skipped });
    return rows.length;
  }

  /** Export until caught up; resolves with the events covered. */
  async catchUp(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.exportBatch();
      if (!n) return total;
      total += n;
    }
  }

  /** Archived events after the export position (also the `rstar_kafka_export_lag_events` gauge). */
  async lag(): Promise<number> {
    const r = await this.ds!.query(`SELECT count(*)::bigint AS n FROM "${this.schema}".events WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)`, [
      this.position.txid, this.position.position,
    ]);
    const n = Number(r[0].n);
    lagGauge().set({ topic: this.topic }, n);
    return n;
  }

  /** The stored position (archive events exported, and the position of the last one). */
  async exportedPosition(): Promise<{ txid: string; position: number; events: number }> {
    const p = await this.loadPosition();
    return { txid: p.txid, position: p.position, events: p.events };
  }

  /** Connect (retrying while Postgres, Kafka or the lock are not available) and export in the background until {@link stop}. */
  start(): void {
    this.follower.start();
  }

  /** Stop after the batch in progress and disconnect (the lock is released with the connection). */
  async stop(): Promise<void> {
    await this.follower.stop();
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
    this.producer = null;
    this.admin = null;
    await this.lockRunner?.release().catch(() => undefined);
    this.lockRunner = null;
    if (this.ds?.isInitialized) await this.ds.destroy().catch(() => undefined);
    this.ds = null;
  }

  private async connectProducer(): Promise<void> {
    const producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    this.producer = producer;
  }

  /** A new producer (new producer id): the failed one's sequence numbers may be out of step with the broker. */
  private async reconnectProducer(): Promise<void> {
    const old = this.producer;
    this.producer = null;
    await old?.disconnect().catch(() => undefined);
    await this.connectProducer().catch((e) => this.log.warn('kafka producer reconnect failed; retrying on the next batch', { err: e }));
  }

  /** Hold the session advisory lock of this topic's export (on a connection of its own), waiting while another exporter holds it. */
  private async acquireLock(): Promise<void> {
    if (this.lockRunner) return;
    const q = this.ds!.createQueryRunner();
    await q.connect();
    const key = `rstar-kafka-export:${this.schema}:${this.topic}`;
    for (let waited = 0; ; waited++) {
      const [{ ok }] = await q.query('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [key]);
      if (ok) break;
      if (waited % 60 === 0) this.log.info('another exporter holds the export lock; standing by', { topic: this.topic });
      if (this.follower.isStopping) {
        await q.release();
        throw new KafkaExportStoppedError();
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
    this.lockRunner = q;
  }

  private async loadPosition(): Promise<{ txid: string; position: number; events: number; offsets: Record<string, number> }> {
    const t = `"${this.schema}".kafka_export_positions`;
    await this.ds!.query(`INSERT INTO ${t} (topic, txid, position, events, offsets, updated_at) VALUES ($1, '0', 0, 0, '{}'::jsonb, now()) ON CONFLICT (topic) DO NOTHING`, [this.topic]);
    const [r] = await this.ds!.query(`SELECT txid, position, events, offsets FROM ${t} WHERE topic = $1`, [this.topic]);
    return { txid: r.txid, position: Number(r.position), events: Number(r.events), offsets: r.offsets };
  }

  /** The next events after the position, as Kafka messages (the envelope, upcast to the current version, as JSON). */
  private async readAfter(limit: number): Promise<Row[]> {
    const rows: any[] = await this.ds!.query(
      `SELECT global_position, transaction_id::text AS txid, id, type, version, run_id, stream_id, data, meta, recorded_at
       FROM "${this.schema}".events
       WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint) AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY transaction_id, global_position LIMIT $3`,
      [this.position.txid, this.position.position, limit],
    );
    return rows.map((r) => {
      const e = parseEvent({ id: r.id, type: r.type, version: r.version, runId: r.run_id, streamId: r.stream_id, data: r.data, meta: r.meta });
      const position = Number(r.global_position);
      const headers: Record<string, string> = {
        'rstar-event-id': e.id,
        'rstar-event-type': e.type,
        'rstar-event-version': String(e.version),
        'rstar-archive-position': String(position),
        'rstar-archive-txid': r.txid,
        'rstar-archived-at': new Date(r.recorded_at).toISOString(),
      };
      if (e.meta.traceparent) headers.traceparent = e.meta.traceparent;
      return { txid: r.txid, position, runId: e.runId, message: { key: e.runId, value: JSON.stringify(e), headers } };
    });
  }
}

/** `fn`, retried (5 times, 200 ms apart, doubling) while it fails with an error Kafka marks retriable. */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt >= 6 || !(e as { retriable?: boolean }).retriable) throw e;
      await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1)));
    }
  }
}

/** typeorm's `query` answers an UPDATE with `[rows, count]` on Postgres. */
function rowCount(result: unknown): number {
  return Array.isArray(result) && typeof result[1] === 'number' ? result[1] : -1;
}
