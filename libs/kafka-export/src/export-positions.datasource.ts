import type { DataSource } from 'typeorm';
import { openArchiveDataSource } from '@rstar/read-models';
import { ExportPositionEntity } from './export-position.entity';
import { KafkaExport1764547300000 } from './migrations/1764547300000-kafka-export.migration';

/** Options of {@link openExportPositions}. */
export interface ExportPositionsOptions {
  /** Postgres URL of the archive. */
  connectionString: string;
  /** The archive's schema (default `rstar`): the position table lives beside the events. */
  schema?: string;
  /**
   * Create the table when missing (default true). False for a least-privilege role (the control plane with
   * `RSTAR_DB_MIGRATE=false`), which may not create tables in the archive's schema: the table is then only
   * checked to be current, and `rstar db migrate` (the migration role) creates it.
   */
  migrate?: boolean;
  /** Connections (default 2: the export lock holds one). */
  poolSize?: number;
}

/**
 * The export's typeorm DataSource: table `kafka_export_positions` in the archive's schema, migrated by its
 * own migrations table (`kafka_export_migrations`) under an advisory lock, or only checked (`migrate: false`).
 * @throws ReadModelsConfigError (from @rstar/read-models) for a bad schema, or (`migrate: false`) a table
 * behind the code, naming `rstar db migrate`; the driver's error when Postgres does not answer.
 */
export function openExportPositions(opts: ExportPositionsOptions): Promise<DataSource> {
  return openArchiveDataSource({
    connectionString: opts.connectionString, schema: opts.schema ?? 'rstar', poolSize: opts.poolSize ?? 2, migrate: opts.migrate,
    entities: [ExportPositionEntity], migrations: [KafkaExport1764547300000], migrationsTableName: 'kafka_export_migrations',
  });
}
