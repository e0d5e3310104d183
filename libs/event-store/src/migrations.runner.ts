import type { Pool } from 'pg';
import { EventStoreConfigError } from './errors';
import { LATEST_MIGRATION, MIGRATIONS } from './migrations';

/**
 * Check that the archive schema is at {@link LATEST_MIGRATION} (a role that may not migrate).
 * @throws EventStoreConfigError naming `rstar db migrate` when it is behind or missing.
 */
export async function checkArchiveMigrated(pool: Pool, schema: string): Promise<void> {
  let version = 0;
  try {
    version = Number((await pool.query(`SELECT coalesce(max(version), 0) AS v FROM "${schema}".schema_migrations`)).rows[0].v);
  } catch (e) {
    if ((e as { code?: string }).code !== '42P01' && (e as { code?: string }).code !== '3F000') throw e;
  }
  if (version < LATEST_MIGRATION) {
    throw new EventStoreConfigError(
      `the archive schema "${schema}" is at migration ${version}, this code needs ${LATEST_MIGRATION}: run \`rstar db migrate\` with the owner role (this service's role may not change the schema)`,
      'migrate',
    );
  }
}

/**
 * Apply the pending {@link MIGRATIONS} to `schema`, each in its own transaction with `rstar.migrating`
 * set (the append-only triggers let a migration rewrite), under a session advisory lock (safe when several
 * processes boot at once). Run it as the archive's owner: the services' roles may not change the schema.
 */
export async function migrateArchive(pool: Pool, schema: string): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query('SELECT pg_advisory_lock(hashtext($1))', [`rstar-migrate:${schema}`]);
    // Created only when missing: CREATE SCHEMA IF NOT EXISTS wants the database's CREATE right even when
    // the schema exists, which the migration role (the schema's owner) does not have.
    if (!(await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount) await c.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await c.query(
      `CREATE TABLE IF NOT EXISTS "${schema}".schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = new Set(
      (await c.query(`SELECT version FROM "${schema}".schema_migrations`)).rows.map((r) => Number(r.version)),
    );
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await c.query('BEGIN');
      try {
        await c.query(`SET LOCAL rstar.migrating = 'on'`);
        await c.query(m.sql.replaceAll('{{schema}}', `"${schema}"`));
        await c.query(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
        await c.query('COMMIT');
      } catch (e) {
        await c.query('ROLLBACK');
        throw e;
      }
    }
  } finally {
    await c.query('SELECT pg_advisory_unlock(hashtext($1))', [`rstar-migrate:${schema}`]).catch(() => undefined);
    c.release();
  }
}
