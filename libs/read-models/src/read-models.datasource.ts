import { DataSource, MigrationExecutor, type DataSourceOptions, type MigrationInterface, type QueryRunner } from 'typeorm';
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
  /** The archive's schema (default `rstar`): where the projector reads the `events` table. */
  schema?: string;
  /**
   * The schema of the read-model tables (default `<schema>_read`, the schema `rstar db roles` prepares):
   * apart from the archive, so the control plane's role may write them without any right to change the
   * archive's schema.
   */
  readModelSchema?: string;
  /**
   * Apply pending migrations on open (default true). False for a least-privilege role (`RSTAR_DB_MIGRATE=false`):
   * the tables are then only checked to be current, and `rstar db migrate` (the migration role) creates them.
   */
  migrate?: boolean;
  /** Connections (default 4; 1 for PGlite, which serves one at a time). */
  poolSize?: number;
}

const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/** The read-model schema of `opts`: `readModelSchema`, else `<schema>_read` (schema default `rstar`). */
export function readModelSchemaOf(opts: Pick<ReadModelsOptions, 'schema' | 'readModelSchema'>): string {
  return opts.readModelSchema ?? `${opts.schema ?? 'rstar'}_read`;
}

/**
 * Open the typeorm DataSource of the read models on the archive's database, in the read-model schema
 * ({@link readModelSchemaOf}), and apply pending migrations with typeorm's migration runner (table
 * `read_model_migrations`) under a Postgres advisory lock, so processes starting together migrate once
 * (`migrate: false`: only check). The archive's `events` table is read through the same DataSource with
 * raw SQL (the projector).
 * @throws ReadModelsConfigError for a bad schema or a missing URL, or (`migrate: false`) tables behind the
 * code, naming `rstar db migrate`; the driver's error when Postgres does not answer.
 */
export function openReadModelsDataSource(opts: ReadModelsOptions): Promise<DataSource> {
  const schema = opts.schema ?? 'rstar';
  if (!SCHEMA_RE.test(schema)) throw new ReadModelsConfigError(`"schema" must match ${SCHEMA_RE} (a lowercase identifier), got "${schema}"`, 'schema');
  const readModelSchema = readModelSchemaOf(opts);
  if (!SCHEMA_RE.test(readModelSchema)) {
    throw new ReadModelsConfigError(`"readModelSchema" must match ${SCHEMA_RE} (a lowercase identifier), got "${readModelSchema}"`, 'readModelSchema');
  }
  return openArchiveDataSource({
    ...opts, schema: readModelSchema, entities: READ_MODEL_ENTITIES, migrations: READ_MODEL_MIGRATIONS, migrationsTableName: 'read_model_migrations',
  });
}

/** What {@link openArchiveDataSource} opens: entities and migrations of one component, and its migrations table. */
export interface ArchiveDataSourceOptions extends ReadModelsOptions {
  entities: NonNullable<DataSourceOptions['entities']>;
  migrations: Array<new () => MigrationInterface>;
  /** Table recording the component's applied migrations (one per component, so each migrates on its own). */
  migrationsTableName: string;
}

/**
 * A typeorm DataSource beside the archive (its database; `schema` is where the component's tables live)
 * for one component's entities, with its migrations applied by typeorm's runner under an advisory lock
 * named after the migrations table, or with `migrate: false` only checked (a role that may not create
 * tables). Used by the read models and by the Kafka export. @throws as {@link openReadModelsDataSource}.
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
    if (opts.migrate === false) {
      await requireMigrated(ds, q, schema, opts.migrationsTableName);
    } else {
      await migrateLocked(ds, q, schema, opts.migrationsTableName);
    }
  } catch (e) {
    await q.release().catch(() => undefined);
    await ds.destroy().catch(() => undefined);
    throw e;
  }
  await q.release();
  return ds;
}

/** Apply the pending migrations on `q` under the component's advisory lock. */
async function migrateLocked(ds: DataSource, q: QueryRunner, schema: string, table: string): Promise<void> {
  await q.query('SELECT pg_advisory_lock(hashtext($1))', [`rstar-${table}:${schema}`]);
  try {
    // Created only when missing: CREATE SCHEMA IF NOT EXISTS wants the database's CREATE right even when
    // the schema exists, which the migration role (the schema's owner) does not have.
    if (!(await q.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).length) await q.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    // On the connection holding the lock: a PGlite archive serves one connection at a time.
    const migrations = new MigrationExecutor(ds, q);
    migrations.transaction = 'each';
    await migrations.executePendingMigrations();
  } finally {
    await q.query('SELECT pg_advisory_unlock(hashtext($1))', [`rstar-${table}:${schema}`]).catch(() => undefined);
  }
}

/**
 * A role that may not migrate: every migration of the component must be recorded in `<schema>.<table>`.
 * @throws ReadModelsConfigError naming `rstar db migrate` when the table is missing or behind.
 */
async function requireMigrated(ds: DataSource, q: QueryRunner, schema: string, table: string): Promise<void> {
  const names = (ds.options.migrations as Array<new () => MigrationInterface>).map((m) => new m().name ?? m.name);
  let applied = new Set<string>();
  try {
    // On the connection already held: a pool of one has no other.
    applied = new Set((await q.query(`SELECT name FROM "${schema}"."${table}"`)).map((r: { name: string }) => r.name));
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code !== '42P01' && code !== '3F000' && code !== '42501') throw e;
  }
  const missing = names.filter((n) => !applied.has(n));
  if (missing.length) {
    throw new ReadModelsConfigError(
      `the tables in schema "${schema}" miss migration${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (${table}): run \`rstar db migrate\` with the migration role (this service's role may not create tables; RSTAR_DB_MIGRATE=false)`,
      'migrate',
    );
  }
}
