import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * How far the archive is exported to one Kafka topic (table `kafka_export_positions`): the archive
 * position of the last event produced and acknowledged, and the number of messages the exporter has
 * written to each partition by then (its next offset there). Updated only after the produce is
 * acknowledged; a restart compares the offsets with the partitions' high watermarks to find the events a
 * dead exporter produced after its last update (see KafkaExporter).
 */
@Entity({ name: 'kafka_export_positions' })
export class ExportPositionEntity {
  @PrimaryColumn({ type: 'text' }) topic!: string;
  /** Postgres xid8 of the last exported event's transaction, as a decimal string. */
  @Column({ type: 'text' }) txid!: string;
  @Column({ type: 'bigint' }) position!: string;
  /** Events exported since position 0. */
  @Column({ type: 'bigint' }) events!: string;
  /** Partition -> next offset this exporter writes there. */
  @Column({ type: 'jsonb' }) offsets!: Record<string, number>;
  @Column({ name: 'updated_at', type: 'timestamptz' }) updatedAt!: Date;
}
