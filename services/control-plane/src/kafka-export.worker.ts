import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { KafkaExporter } from '@rstar/kafka-export';
import { BackgroundWorker, ReadinessRegistry, StoreConnection, type Stoppable } from '@rstar/nest-runtime';
import type { ControlPlaneEnv } from './control-plane.config';

/**
 * The optional Kafka export (RSTAR_KAFKA_BROKERS set): mirrors the archive to one topic keyed by run id,
 * exactly once per event (libs/kafka-export). It connects and reconciles in the background, retrying while
 * Kafka is down; a second control plane stands by on the export lock. kafkajs is loaded only when enabled.
 */
@Injectable()
export class KafkaExportWorker extends BackgroundWorker {
  private exporter: KafkaExporter | null = null;

  constructor(
    private readonly store: StoreConnection,
    private readonly cfg: ConfigService<ControlPlaneEnv, true>,
    registry: ReadinessRegistry,
  ) {
    super('kafka-export', registry);
  }

  /** Whether the export is configured at all. */
  get enabled(): boolean {
    return !!this.cfg.get('RSTAR_KAFKA_BROKERS', { infer: true });
  }

  /** Where the export stands (null when disabled or not started). */
  async status(): Promise<{ topic: string; events: number; lag: number } | null> {
    const x = this.exporter;
    if (!x) return null;
    const [p, lag] = await Promise.all([x.exportedPosition(), x.lag()]);
    return { topic: x.topic, events: p.events, lag };
  }

  protected async launch(): Promise<Stoppable> {
    if (!this.enabled) return { stop: async () => undefined };
    await this.store.ready();
    const c = (k: keyof ControlPlaneEnv) => this.cfg.get(k, { infer: true }) as never;
    const { KafkaExporter } = await import('@rstar/kafka-export');
    const mechanism = c('RSTAR_KAFKA_SASL_MECHANISM') as ControlPlaneEnv['RSTAR_KAFKA_SASL_MECHANISM'];
    const exporter = new KafkaExporter({
      connectionString: c('RSTAR_DATABASE_URL'),
      schema: c('RSTAR_DB_SCHEMA') || undefined,
      // A least-privilege role (RSTAR_DB_MIGRATE=false) may not create the position table: `rstar db migrate` does.
      migrate: c('RSTAR_DB_MIGRATE') !== 'false',
      brokers: (c('RSTAR_KAFKA_BROKERS') as string).split(','),
      topic: c('RSTAR_KAFKA_TOPIC'),
      partitions: c('RSTAR_KAFKA_PARTITIONS'),
      replicationFactor: c('RSTAR_KAFKA_REPLICATION'),
      clientId: c('RSTAR_KAFKA_CLIENT_ID'),
      batchSize: c('RSTAR_KAFKA_BATCH'),
      ssl: c('RSTAR_KAFKA_SSL') === '1',
      sasl: mechanism ? { mechanism, username: c('RSTAR_KAFKA_SASL_USERNAME') ?? '', password: c('RSTAR_KAFKA_SASL_PASSWORD') ?? '' } : undefined,
      logger: this.log,
    });
    exporter.start();
    this.exporter = exporter;
    return { stop: () => exporter.stop() };
  }
}
