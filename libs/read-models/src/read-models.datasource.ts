import { DataSource, MigrationExecutor, type DataSourceOptions, type MigrationInterface } from 'typeorm';
import { RstarError } from '@rstar/contracts';
import { GroupEntity } from './entities/group.entity';
import { ProjectionCheckpointEntity } from './entities/projection-checkpoint.entity';
import { RolloutEntity } from './entities/rollout.entity';
import { RunEntity } from './entities/run.entity';
import { StepEntity } from './entities/step.entity';
import { ToolCallEntity } from './entities/tool-call.entity';
import { ReadModels1764547200000 } from './migrations/1764547200000-read-models.migration';
import { GroupTimeout1764633600000 } from './migrations/1764633600000-group-timeout.migration';

/** A bad read-model option; `field` names it. */
export class ReadModelsConfigError extends RstarError {
  constructor(message: string, field: string) {
    super('invalid_read_models_option', message, field);
  }
}

/** Every read-model entity (typeorm). */
export const READ_MODEL_ENTITIES = [RunEntity, StepEntity, GroupEntity, RolloutEntity, ToolCallEntity, ProjectionCheckpointEntity];
/** Every read-model migration, oldest first. */
export const READ_MODEL_MIGRATIONS = [ReadModels1764547200000, GroupTimeout1764633600000];
/** The read-model tables (without the checkpoints), in the order a rebuild empties them. */
export const READ_MODEL_TABLES = ['runs', 'steps', 'groups', 'rollouts', 'tool_calls'] as const;

/** Options of {@link openReadModelsDataSource}. */
export interface ReadModelsOptions {
  /** Postgres URL of the archive's database (`postgres://user:pass@host:port/db`). */
  connectionString: string;
  /** The archive's schema (default `rstar`): the read models live beside its `events` table. */
  schema?: string;
  /** Connections (default 4; 1 for PGlite, which serves one at a time). */
  poolSize?: number;
}

const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Open the typeorm DataSource of the read models on the archive's database and schema, and apply pending
 * migrations with typeorm's migration runner (table `read_model_migrations`) under a Postgres advisory
 * lock, so processes starting together migrate once. The archive's `events` table is read through the
 * same DataSource with raw SQL (the projector).
 * @throws ReadModelsConfigError for a bad schema or a missing URL; the driver's error when Postgres does not answer.
 */
export function openReadModelsDataSource(opts: ReadModelsOptions): Promise<DataSource> {
  return openArchiveDataSource({ ...opts, entities: READ_MODEL_ENTITIES, migrations: READ_MODEL_MIGRATIONS, migrationsTableName: 'read_model_migrations' });
}

/** What {@link openArchiveDataSource} opens: entities and migrations of one component, and its migrations table. */
export interface ArchiveDataSourceOptions extends ReadModelsOptions {
  entities: NonNullable<DataSourceOptions['entities']>;
  migrations: Array<new () => MigrationInterface>;
  /** Table recording the component's applied migrations (one per component, so each migrates on its own). */
  migrationsTableName: string;
}

/**
 * A typeorm DataSource beside the archive (its database and schema) for one component's entities, with
 * its migrations applied by typeorm's runner under an advisory lock named after the migrations table.
 * Used by the read models and by the Kafka export. @throws as {@link openReadModelsDataSource}.
 */
export async function openArchiveDataSource(opts: ArchiveDataSourceOptions): Promise<DataSource> {
  const schema = opts.schema ?? 'rstar';
  if (!SCHEMA_RE.test(schema)) throw new ReadModelsConfigError(`"schema" must match ${SCHEMA_RE} (a lowercase identifier), got "${schema}"`, 'schema');
  if (!opts.connectionString) throw new ReadModelsConfigError('"connectionString" is required (postgres://...)', 'connectionString');
  const ds = new DataSource({
    type: 'postgres',
    url: opts.connectionString,
    schema,
    entities: opts.entities,
    migrations: opts.migrations,
    migrationsTableName: opts.migrationsTableName,
    synchronize: false,
    logging: false,
    extra: { max: opts.poolSize ?? 4 },
    // An idle connection whose server went away (a restart) errors on the pool; the next query reconnects.
    poolErrorHandler: () => undefined,
  });
  await ds.initialize();
  const q = ds.createQueryRunner();
  try {
    await q.connect();
    await q.query('SELECT pg_advisory_lock(hashtext($1))', [`rstar-${opts.migrationsTableName}:${schema}`]);
    try {
      await q.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      // On the connection holding the lock: a PGlite archive serves one connection at a time.
      const migrations = new MigrationExecutor(ds, q);
      migrations.transaction = 'each';
      await migrations.executePendingMigrations();
    } finally {
      await q.query('SELECT pg_advisory_unlock(hashtext($1))', [`rstar-${opts.migrationsTableName}:${schema}`]).catch(() => undefined);
    }
  } catch (e) {
    await q.release().catch(() => undefined);
    await ds.destroy().catch(() => undefined);
    throw e;
  }
  await q.release();
  return ds;
}
