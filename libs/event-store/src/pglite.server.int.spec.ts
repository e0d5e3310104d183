import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Pool } from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './pglite.server';

describe('startEmbeddedPostgres (PGlite over the wire protocol)', () => {
  let pg: EmbeddedPostgres;
  beforeAll(async () => {
    pg = await startEmbeddedPostgres();
  });
  afterAll(async () => pg?.close());

  it('serves concurrent extended-protocol queries from many connections without mixing them up', async () => {
    const pool = new Pool({ connectionString: pg.url, max: 8 });
    try {
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => pool.query('SELECT $1::int * 2 AS v, $2::text AS s', [i, `s${i}`])),
      );
      expect(results.map((r) => r.rows[0])).toEqual(Array.from({ length: 200 }, (_, i) => ({ v: i * 2, s: `s${i}` })));
    } finally {
      await pool.end();
    }
  });

  it('gives a connection inside a transaction the database to itself, and rolls back a dropped one', async () => {
    const a = new Client({ connectionString: pg.url });
    const b = new Client({ connectionString: pg.url });
    await a.connect();
    await b.connect();
    try {
      await a.query('CREATE TABLE t (x int)');
      await a.query('BEGIN');
      await a.query('INSERT INTO t VALUES (1)');
      // b's statement queues until a's transaction ends, so it never sees a's uncommitted row mid-way.
      const bRead = b.query('SELECT count(*)::int AS n FROM t');
      await a.query('INSERT INTO t VALUES (2)');
      await a.query('COMMIT');
      expect((await bRead).rows[0].n).toBe(2);

      const c = new Client({ connectionString: pg.url });
      await c.connect();
      await c.query('BEGIN');
      await c.query('INSERT INTO t VALUES (3)');
      await c.end(); // dropped inside the transaction
      expect((await b.query('SELECT count(*)::int AS n FROM t')).rows[0].n).toBe(2);
    } finally {
      await a.end();
      await b.end();
    }
  });
});
