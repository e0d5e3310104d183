import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'pg';
import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { EventStore } from './event-store';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './pglite.server';
import { archiveRoleNames, archiveRolesSql, dropArchiveRolesSql } from './roles.sql';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const tag = `sec${process.pid}${Date.now().toString(36)}`;

function ev(runId: string, stream: string, i: number): RstarEvent {
  return makeEvent('StepCompleted', { runId, streamId: stream, key: `${stream}:${i}`, producer: 'test', data: { step: i, stage: 'rl', metrics: { reward: i / 3, nan: null } } });
}

/** Connect as `role` (password `pw-<role>`) to the test database. */
function urlAs(role: string): string {
  const u = new URL(PG_URL);
  u.username = role;
  u.password = `pw-${role}`;
  return u.toString();
}

async function sql(url: string, text: string, params: unknown[] = []): Promise<{ rows: any[]; rowCount: number | null }> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, params);
  } finally {
    await c.end();
  }
}

/** The SQLSTATE a statement fails with, or null when it succeeds. */
async function failsWith(url: string, text: string): Promise<string | null> {
  try {
    await sql(url, text);
    return null;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

describe('archive on Postgres: least-privilege roles, append-only events, hash chain', () => {
  const schema = tag;
  const prefix = `${tag}_`;
  const n = archiveRoleNames(prefix);
  const run = 'run-chain';
  const t = `"${schema}".events`;

  beforeAll(async () => {
    const admin = await EventStore.connect({ connectionString: PG_URL, schema });
    await admin.close();
    const passwords = Object.fromEntries(Object.entries(n.logins).map(([k, role]) => [k, `pw-${role}`]));
    await sql(PG_URL, archiveRolesSql({ schema, prefix, passwords }));
  });
  afterAll(async () => {
    await sql(PG_URL, `DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_read" CASCADE`).catch(() => undefined);
    await sql(PG_URL, dropArchiveRolesSql(prefix));
  });

  it("the archiver's role appends (COPY and unnest) but cannot UPDATE, DELETE or TRUNCATE events", async () => {
    for (const appendMethod of ['copy', 'unnest'] as const) {
      const store = await EventStore.connect({ connectionString: urlAs(n.logins.control_plane), schema, migrate: false, appendMethod });
      const events = Array.from({ length: 6 }, (_, i) => ev(run, `step-${appendMethod}`, i));
      expect(await store.appendBatch(events)).toEqual({ appended: 6, duplicates: 0, quarantined: 0, collisions: [] });
      expect(await store.appendBatch(events.slice(0, 2))).toEqual({ appended: 0, duplicates: 2, quarantined: 0, collisions: [] });
      await store.close();
    }
    const archiver = urlAs(n.logins.control_plane);
    expect(await failsWith(archiver, `UPDATE ${t} SET data = '{}'::jsonb`)).toBe('42501');
    expect(await failsWith(archiver, `DELETE FROM ${t}`)).toBe('42501');
    expect(await failsWith(archiver, `TRUNCATE ${t}`)).toBe('42501');
    expect(await failsWith(archiver, `CREATE TABLE "${schema}".x (a int)`)).toBe('42501');
    // Its role may not run migrations, and says how to.
    expect(await failsWith(archiver, `ALTER TABLE ${t} ADD COLUMN x int`)).toBe('42501');
  });

  it('readers only read; no service role is a superuser; the trigger stops even the owner and a superuser', async () => {
    const reader = urlAs(n.logins.optimization);
    expect((await sql(reader, `SELECT count(*)::int AS c FROM ${t}`)).rows[0].c).toBe(12);
    expect(await failsWith(reader, `INSERT INTO ${t} (id, type, version, run_id, stream_id, stream_position, data, meta) VALUES ('x','RunFailed',1,'r','s',1,'{}','{}')`)).toBe('42501');
    const store = await EventStore.connect({ connectionString: reader, schema, migrate: false });
    expect(await store.readRunSnapshot(run)).toHaveLength(12);
    await store.close();
    const supers = (await sql(PG_URL, `SELECT rolname FROM pg_roles WHERE rolname LIKE $1 AND (rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls)`, [`${prefix}%`])).rows;
    expect(supers).toEqual([]);
    const owner = urlAs(n.logins.owner);
    for (const stmt of [`UPDATE ${t} SET data = '{}'::jsonb`, `DELETE FROM ${t}`, `TRUNCATE ${t}`]) {
      expect(await failsWith(owner, stmt), `owner: ${stmt}`).toBe('RS001');
      expect(await failsWith(PG_URL, stmt), `superuser: ${stmt}`).toBe('RS001');
    }
  });

  it('only the migration role may use the migration flag or change the table: a service role is refused even with a misgranted UPDATE', async () => {
    const archiver = urlAs(n.logins.control_plane);
    const victim = ev(run, 'step-copy', 0).id;
    const before = (await sql(PG_URL, `SELECT data FROM ${t} WHERE id = $1`, [victim])).rows[0].data;
    // Owner-only statements: the trigger, the table, the trigger function.
    expect(await failsWith(archiver, `ALTER TABLE ${t} DISABLE TRIGGER events_append_only_rows`)).toBe('42501');
    expect(await failsWith(archiver, `ALTER TABLE ${t} DISABLE TRIGGER ALL`)).toBe('42501');
    expect(await failsWith(archiver, `CREATE OR REPLACE FUNCTION "${schema}".events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`)).toBe('42501');
    expect(await failsWith(archiver, `BEGIN; SET LOCAL rstar.migrating = 'on'; UPDATE ${t} SET data = '{}'::jsonb WHERE id = '${victim}'; COMMIT;`)).toBe('42501');
    // A grant that should not be there (an operator's mistake): the flag still does not open the archive.
    await sql(PG_URL, `GRANT UPDATE, DELETE ON ${t} TO "${n.logins.control_plane}"`);
    try {
      const c = new Client({ connectionString: archiver });
      await c.connect();
      try {
        await c.query('BEGIN');
        await c.query(`SET LOCAL rstar.migrating = 'on'`);
        const e = await c.query(`UPDATE ${t} SET data = '{}'::jsonb WHERE id = $1`, [victim]).then(() => null, (x: { code?: string; message: string }) => x);
        expect(e?.code).toBe('RS001');
        expect(e?.message).toMatch(new RegExp(`rstar\\.migrating is honoured for the migration role ${n.logins.owner}, not for ${n.logins.control_plane}`));
        await c.query('ROLLBACK');
        expect(await failsWith(archiver, `BEGIN; SET LOCAL rstar.migrating = 'on'; DELETE FROM ${t} WHERE id = '${victim}'; COMMIT;`)).toBe('RS001');
      } finally {
        await c.end();
      }
    } finally {
      await sql(PG_URL, `REVOKE UPDATE, DELETE ON ${t} FROM "${n.logins.control_plane}"`);
    }
    expect((await sql(PG_URL, `SELECT data FROM ${t} WHERE id = $1`, [victim])).rows[0].data).toEqual(before);
    // The migration role still may (what `rstar db migrate` does); the row is left as it was.
    const owned = await sql(urlAs(n.logins.owner), `BEGIN; SET LOCAL rstar.migrating = 'on'; UPDATE ${t} SET data = data WHERE id = '${victim}'; COMMIT;`);
    expect(owned).toBeDefined();
    const store = await EventStore.connect({ connectionString: urlAs(n.logins.operator), schema, migrate: false });
    expect(await store.verifyChain(run)).toMatchObject({ ok: true, checked: 12 });
    await store.close();
  });

  it('names the roles a service must not run as: a superuser and the owner; the services\' roles pass', async () => {
    const problem = async (url: string) => {
      const store = await EventStore.connect({ connectionString: url, schema, migrate: false });
      try {
        return await store.privilegeProblem();
      } finally {
        await store.close();
      }
    };
    expect(await problem(PG_URL)).toMatch(/^it connects as "[^"]+", a superuser$/);
    expect(await problem(urlAs(n.logins.owner))).toMatch(/^it connects as "[^"]+", the owner of "[^"]+"\.events/);
    for (const login of ['control_plane', 'optimization', 'resampling', 'operator'] as const) expect(await problem(urlAs(n.logins[login])), login).toBeNull();
  });

  it('a superuser edit that goes around the trigger is caught by verifyChain at that event', async () => {
    const store = await EventStore.connect({ connectionString: urlAs(n.logins.operator), schema, migrate: false });
    const clean = await store.verifyChain(run, { pageSize: 4 });
    expect(clean).toMatchObject({ ok: true, checked: 12, unchained: 0, streams: 2, firstBreak: null });
    const victim = ev(run, 'step-copy', 3).id;
    await sql(PG_URL, `BEGIN; SET LOCAL rstar.migrating = 'on'; UPDATE ${t} SET data = jsonb_set(data, '{metrics,reward}', '42') WHERE id = '${victim}'; COMMIT;`);
    const edited = await store.verifyChain(run);
    expect(edited.ok).toBe(false);
    expect(edited.firstBreak).toMatchObject({ eventId: victim, kind: 'hash_mismatch', streamPosition: 4 });
    expect(edited.firstBreak!.message).toContain(`chain broken at event ${victim}`);
    // Removing an event is a gap at the next one.
    const gone = ev(run, 'step-unnest', 1).id;
    await sql(PG_URL, `BEGIN; SET LOCAL rstar.migrating = 'on'; DELETE FROM ${t} WHERE id = '${gone}'; COMMIT;`);
    const both = await store.verifyChain(run);
    // Breaks in global order: the copy stream was archived first.
    expect(both.breaks.map((b) => [b.eventId, b.kind])).toEqual([
      [victim, 'hash_mismatch'],
      [ev(run, 'step-unnest', 2).id, 'position_gap'],
    ]);
    await store.close();
  });

  it('events archived before the chain start their stream unchained; new events chain on', async () => {
    await sql(
      PG_URL,
      `INSERT INTO ${t} (id, type, version, run_id, stream_id, stream_position, data, meta) VALUES ('legacy-1','RunFailed',1,'run-legacy','s-legacy',1,'{"error":"x","step":null}','{"producer":"t"}')`,
    );
    const store = await EventStore.connect({ connectionString: urlAs(n.logins.control_plane), schema, migrate: false });
    await store.appendBatch([ev('run-legacy', 's-legacy', 2), ev('run-legacy', 's-legacy', 3)]);
    expect(await store.verifyChain('run-legacy')).toMatchObject({ ok: true, checked: 2, unchained: 1 });
    await store.close();
  });

  it('a service role connecting to an archive that is not migrated is told to run rstar db migrate', async () => {
    await expect(EventStore.connect({ connectionString: urlAs(n.logins.optimization), schema: `${schema}_nothing`, migrate: false })).rejects.toThrow(/rstar db migrate/);
  });
});

describe('hash chain on the embedded PGlite archive (standalone runs)', () => {
  let pg: EmbeddedPostgres;
  beforeAll(async () => {
    pg = await startEmbeddedPostgres();
  });
  afterAll(async () => pg?.close());

  it('chains appends and names the edited event', async () => {
    const store = await EventStore.connect({ connectionString: pg.url });
    await store.appendBatch(Array.from({ length: 5 }, (_, i) => ev('r', 'run-r', i)));
    await store.appendBatch([ev('r', 'run-r', 5), ev('r', 'other', 0)]);
    expect(await store.verifyChain('r')).toMatchObject({ ok: true, checked: 7, streams: 2 });
    const c = await store.connectClient();
    await c.query(`BEGIN; SET LOCAL rstar.migrating = 'on'; UPDATE rstar.events SET meta = meta || '{"producer":"mallory"}' WHERE stream_position = 2 AND stream_id = 'run-r'; COMMIT;`);
    c.release();
    expect((await store.verifyChain('r')).firstBreak).toMatchObject({ eventId: ev('r', 'run-r', 1).id, kind: 'hash_mismatch' });
    await store.close();
  });
});
