import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveRoleNames, archiveRolesSql, dropArchiveRolesSql, EventStore } from '@rstar/event-store';
import { sampleEvent } from '@rstar/testing';
import { ReadModels } from './index';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const tag = `rmr${process.pid}${Date.now().toString(36)}`;

function urlAs(role: string): string {
  const u = new URL(PG_URL);
  u.username = role;
  u.password = `pw-${role}`;
  return u.toString();
}

async function failsWith(url: string, text: string): Promise<string | null> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(text);
    return null;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  } finally {
    await c.end();
  }
}

/**
 * The read models under the least-privilege roles of `rstar db roles` (issue 27): their tables live in
 * `<schema>_read`, owned by the migration role; the control plane's role projects into them without
 * migrating, the resampler's reads them, and neither may change a table.
 */
describe('read models with the archive roles: own schema, projected by the control plane, read by the others', () => {
  const schema = tag;
  const read = `"${schema}_read"`;
  const prefix = `${tag}_`;
  const n = archiveRoleNames(prefix);
  const runId = `run-${tag}`;

  beforeAll(async () => {
    // What `rstar db roles` does: migrate both as the superuser, then hand everything to the migration role.
    await (await EventStore.connect({ connectionString: PG_URL, schema })).close();
    await (await ReadModels.open({ connectionString: PG_URL, schema, poolSize: 1 })).close();
    const passwords = Object.fromEntries(Object.entries(n.logins).map(([k, role]) => [k, `pw-${role}`]));
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(archiveRolesSql({ schema, prefix, passwords })).finally(() => c.end());
  }, 60_000);
  afterAll(async () => {
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    try {
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS ${read} CASCADE`);
      await c.query(dropArchiveRolesSql(prefix));
    } finally {
      await c.end();
    }
  });

  it('the migration role owns the read-model tables; the control plane projects without migrating; the resampler reads', async () => {
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    const tables = (await c.query(`SELECT tablename, tableowner FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, [`${schema}_read`]).finally(() => c.end())).rows;
    expect(tables.map((t) => t.tablename)).toEqual(['groups', 'projection_checkpoints', 'read_model_migrations', 'rollouts', 'runs', 'steps', 'tool_calls']);
    expect(new Set(tables.map((t) => t.tableowner))).toEqual(new Set([n.logins.owner]));

    const store = await EventStore.connect({ connectionString: urlAs(n.logins.control_plane), schema, migrate: false });
    await store.appendBatch([sampleEvent('RunStarted', { runId, key: runId, producer: 'cli' })]);
    await store.close();
    const cp = await ReadModels.open({ connectionString: urlAs(n.logins.control_plane), schema, migrate: false, poolSize: 1 });
    try {
      expect(await cp.projector().catchUp()).toBe(1);
      expect((await cp.repository.runSummary(runId))?.status).toBe('running');
      // A rebuild (TRUNCATE and re-project) is the projector's too.
      expect(await cp.projector().rebuild()).toBe(1);
    } finally {
      await cp.close();
    }
    const resampler = await ReadModels.open({ connectionString: urlAs(n.logins.resampling), schema, migrate: false, poolSize: 1 });
    try {
      expect(await resampler.openRunIds()).toEqual([runId]);
      await expect(resampler.projector().catchUp()).rejects.toMatchObject({ code: '42501' });
    } finally {
      await resampler.close();
    }
  }, 60_000);

  it('no service role may change a read-model table, fake a migration, or migrate on open', async () => {
    for (const login of ['control_plane', 'resampling'] as const) {
      const url = urlAs(n.logins[login]);
      expect(await failsWith(url, `ALTER TABLE ${read}.runs ADD COLUMN x int`), login).toBe('42501');
      expect(await failsWith(url, `DROP TABLE ${read}.steps`), login).toBe('42501');
      expect(await failsWith(url, `CREATE TABLE ${read}.x (a int)`), login).toBe('42501');
      expect(await failsWith(url, `INSERT INTO ${read}.read_model_migrations (timestamp, name) VALUES (1, 'Fake1')`), login).toBe('42501');
    }
    expect(await failsWith(urlAs(n.logins.resampling), `DELETE FROM ${read}.runs`)).toBe('42501');
    // Migrating on open needs the migration role; a service role's open says how.
    await expect(ReadModels.open({ connectionString: urlAs(n.logins.control_plane), schema: `${schema}x`, migrate: false, poolSize: 1 })).rejects.toThrow(
      /miss migrations? ReadModels1764547200000(, \w+)* \(read_model_migrations\): run `rstar db migrate` with the migration role/,
    );
    // The migration role may migrate again (nothing pending), without the database's CREATE right.
    await (await ReadModels.open({ connectionString: urlAs(n.logins.owner), schema, poolSize: 1 })).close();
    await (await EventStore.connect({ connectionString: urlAs(n.logins.owner), schema, maxConnections: 1 })).close();
  }, 60_000);
});
