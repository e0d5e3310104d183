import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'pg';
import { until } from '@rstar/testing';
import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { EventStore } from './event-store';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './pglite.server';
import { decodePosition, encodePosition, START } from './position';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';

function ev(runId: string, stream: string, i: number): RstarEvent {
  return makeEvent('RunFailed', { runId, streamId: stream, key: `${stream}:${i}`, producer: 'test', data: { error: `e${i}`, step: i } });
}

function suite(
  name: string,
  setup: () => Promise<{ url: string; schema: string; close: () => Promise<void> }>,
  concurrentTransactions: boolean,
  appendMethod: 'auto' | 'unnest' | 'copy',
  expectedMethod: 'unnest' | 'copy',
) {
  describe(`EventStore on ${name}`, () => {
    let store: EventStore;
    let env: { url: string; schema: string; close: () => Promise<void> };
    beforeAll(async () => {
      env = await setup();
      store = await EventStore.connect({ connectionString: env.url, schema: env.schema, maxConnections: 4, appendMethod });
      await store.migrate(); // idempotent
      expect(store.appendMethod).toBe(expectedMethod);
    });
    afterAll(async () => {
      await store?.close();
      await env?.close();
    });

    it('appends with gap-free stream positions, drops duplicates, and upcasts on read', async () => {
      const batch = [ev('r1', 's-a', 1), ev('r1', 's-b', 1), ev('r1', 's-a', 2), ev('r1', 's-a', 2)];
      expect(await store.appendBatch(batch)).toEqual({ appended: 3, duplicates: 1, quarantined: 0, collisions: [] });
      expect(await store.appendBatch([ev('r1', 's-a', 1), ev('r1', 's-a', 3)])).toEqual({ appended: 1, duplicates: 1, quarantined: 0, collisions: [] });
      const a = await store.readStream('s-a');
      expect(a.map((e) => [e.id, e.streamPosition])).toEqual([
        [ev('r1', 's-a', 1).id, 1],
        [ev('r1', 's-a', 2).id, 2],
        [ev('r1', 's-a', 3).id, 3],
      ]);
      const old = { ...makeEvent('RewardAssigned', { runId: 'r1', streamId: 's-r', key: 'x', producer: 't', data: { rolloutId: 'x', groupId: 'g', step: 0, reward: 1, correct: true, extracted: '1', gold: '1', normalizedPrediction: null, normalizedGold: null, rule: 'exact', ms: 1 } }) };
      const v1 = { ...old, version: 1, data: { rolloutId: 'x', groupId: 'g', step: 0, reward: 1, correct: true, extracted: '1', gold: '1', rule: 'exact' } } as unknown as RstarEvent;
      await store.appendBatch([v1]);
      const [r] = await store.readStream('s-r');
      expect(r.version).toBe(2);
      expect(r.type === 'RewardAssigned' && r.data.ms).toBeNull(); // v1 did not measure it
      expect(await store.countByType('r1')).toEqual({ RewardAssigned: 1, RunFailed: 4 });
      const runs = await store.listRuns();
      expect(runs.find((x) => x.runId === 'r1')?.events).toBe(5);
    });

    it('stores a U+0000 in data or meta as U+FFFD instead of refusing the batch forever, and the chain holds', async () => {
      const nul = makeEvent('RunFailed', { runId: 'r-nul', streamId: 's-nul', key: 'nul', producer: 'te\u0000st', data: { error: 'printed \u0000 here', step: 1 } });
      const plain = ev('r-nul', 's-nul', 2);
      expect(await store.appendBatch([nul, plain])).toEqual({ appended: 2, duplicates: 0, quarantined: 0, collisions: [] });
      const [got] = await store.readStream('s-nul');
      expect(got.type === 'RunFailed' && got.data.error).toBe('printed \uFFFD here');
      expect(got.meta.producer).toBe('te\uFFFDst');
      expect(await store.appendBatch([nul])).toEqual({ appended: 0, duplicates: 1, quarantined: 0, collisions: [] });
      expect(await store.verifyChain('r-nul')).toMatchObject({ ok: true, checked: 2 });
    });

    it('keeps stream positions gap-free under concurrent appenders with overlapping duplicates', async () => {
      const all = Array.from({ length: 400 }, (_, i) => ev('r2', `c-${i % 7}`, i));
      const batches = Array.from({ length: 8 }, (_, b) => all.filter((_, i) => i % 8 === b || i % 13 === b));
      const results = await Promise.all(batches.map((b) => store.appendBatch(b)));
      expect(results.reduce((s, r) => s + r.appended, 0)).toBe(400);
      for (let s = 0; s < 7; s++) {
        const rows = await store.readStream(`c-${s}`, { limit: 1000 });
        expect(rows.map((r) => r.streamPosition)).toEqual(rows.map((_, i) => i + 1));
      }
      expect(await store.count('r2')).toBe(400);
    });

    it('pages the run and the global log by (txid, position) and never skips a late commit', async () => {
      // Pages stop at the oldest transaction open anywhere in the cluster (txids are global), so an empty
      // page while another test's transaction is open means "not yet": poll until the whole run is read.
      const seen: string[] = [];
      let after = START;
      await until(async () => {
        const page = await store.readRun('r2', { after, limit: 64, types: ['RunFailed'] });
        seen.push(...page.events.map((e) => e.id));
        if (page.events.length) after = decodePosition(encodePosition(page.last));
        return seen.length >= 400;
      }, 'all 400 events of run r2 paged', { timeoutMs: 120_000 });
      expect(seen).toHaveLength(400);
      expect(new Set(seen).size).toBe(400);

      // PGlite is single-session: an open transaction holds the database, so a late commit cannot happen there.
      if (!concurrentTransactions) return;
      const head = await store.readAll({ limit: 100_000 });
      // A transaction that started earlier (older txid) but commits after later appends are readable.
      const late = new Client({ connectionString: env.url });
      await late.connect();
      await late.query('BEGIN');
      await late.query(`SELECT pg_current_xact_id()`);
      await store.appendBatch([ev('r3', 'late-b', 1)]);
      const before = await store.readAll({ after: head.last, limit: 100 });
      // While the older transaction is open nothing newer is handed out (it would be skipped otherwise).
      expect(before.events).toEqual([]);
      await late.query(
        `INSERT INTO "${env.schema}".events (id, type, version, run_id, stream_id, stream_position, data, meta) VALUES ($1, 'RunFailed', 1, 'r3', 'late-a', 1, $2, $3)`,
        ['late-a', JSON.stringify({ error: 'x', step: null }), JSON.stringify(ev('r3', 'late-a', 1).meta)],
      );
      // A snapshot read of a run sees every committed event even while an older transaction is open
      // (readRun would stop at it, and a reader that stops at an empty page would get a truncated history).
      const lateB = ev('r3', 'late-b', 1).id;
      expect((await store.readRunSnapshot('r3')).map((e) => e.id)).toEqual([lateB]);
      expect((await store.readRun('r3')).events).toEqual([]);
      expect((await store.readRunSnapshot('r3', { types: ['RewardAssigned'] }))).toEqual([]);
      await late.query('COMMIT');
      await late.end();
      const want = ['late-a', ev('r3', 'late-b', 1).id].sort();
      const got: string[] = [];
      let cursor = head.last;
      await until(async () => {
        const page = await store.readAll({ after: cursor, limit: 100 });
        got.push(...page.events.map((e) => e.id));
        if (page.events.length) cursor = page.last;
        return got.length >= want.length;
      }, 'the late commit and the event after it', { timeoutMs: 120_000 });
      expect(got.sort()).toEqual(want);
    });
  });
}

const pgSetup = (tag: string) => async () => {
  const schema = `es_${tag}_${process.pid}_${Date.now().toString(36)}`;
  return {
    url: PG_URL,
    schema,
    close: async () => {
      const c = new Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    },
  };
};

suite('Postgres, unnest appends', pgSetup('test'), true, 'unnest', 'unnest');
suite('Postgres, COPY appends (auto)', pgSetup('copy'), true, 'auto', 'copy');

suite('PGlite (embedded wire-protocol server)', async () => {
  const pg: EmbeddedPostgres = await startEmbeddedPostgres();
  return { url: pg.url, schema: 'rstar', close: () => pg.close() };
}, false, 'auto', 'unnest');

describe('EventStore COPY appends', () => {
  it('escapes COPY delimiters in ids and payloads and round-trips them', async () => {
    const schema = `es_copyesc_${process.pid}_${Date.now().toString(36)}`;
    const store = await EventStore.connect({ connectionString: PG_URL, schema, appendMethod: 'copy' });
    try {
      const nasty = 'tab\there\nnewline\\back\\slash \\N';
      const e = makeEvent('RunFailed', { runId: 'r\tx', streamId: 's\\q', key: 'k\n1', producer: 't', data: { error: `a\tb\nc\\d\re ${nasty}`, step: 1 } });
      expect(await store.appendBatch([e, e])).toEqual({ appended: 1, duplicates: 1, quarantined: 0, collisions: [] });
      const [got] = await store.readStream(e.streamId);
      expect(got.id).toBe(e.id);
      expect(got.runId).toBe(e.runId);
      expect(got.type === 'RunFailed' && got.data.error).toBe(e.type === 'RunFailed' && e.data.error);
    } finally {
      await store.close();
      const c = new Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    }
  });

  it('falls back to unnest when an id collides across streams', async () => {
    const schema = `es_copycol_${process.pid}_${Date.now().toString(36)}`;
    const store = await EventStore.connect({ connectionString: PG_URL, schema, appendMethod: 'copy' });
    try {
      const a = ev('r9', 's-one', 1);
      const forged = { ...ev('r9', 's-two', 1), id: a.id } as RstarEvent;
      const [r1, r2] = await Promise.all([store.appendBatch([a]), store.appendBatch([forged, ev('r9', 's-two', 2)])]);
      expect(r1.appended + r2.appended).toBe(2);
      expect(await store.count('r9')).toBe(2);
    } finally {
      await store.close();
      const c = new Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    }
  });

  it('rejects an unknown appendMethod naming the field', async () => {
    await expect(EventStore.connect({ connectionString: PG_URL, appendMethod: 'bulk' as 'copy' })).rejects.toThrow(/appendMethod/);
  });
});
