import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from './column.transformers';

/**
 * Where a projection (or the Kafka export) stands in the archive (table `projection_checkpoints`): the
 * `(transaction id, global position)` of the last event applied, updated in the same transaction as
 * what that event changed, so every event is applied exactly once.
 */
@Entity({ name: 'projection_checkpoints' })
export class ProjectionCheckpointEntity {
  @PrimaryColumn({ type: 'text' }) name!: string;
  /** Postgres xid8 of the last event's transaction, as a decimal string. */
  @Column({ type: 'text' }) txid!: string;
  @Column({ type: 'bigint', transformer: bigintNumber }) position!: number;
  /** Events applied since position 0. */
  @Column({ type: 'bigint', transformer: bigintNumber }) events!: number;
  @Column({ name: 'updated_at', type: 'timestamptz' }) updatedAt!: Date;
}
