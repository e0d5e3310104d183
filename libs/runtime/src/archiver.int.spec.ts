import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'pg';
import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { InProcessBus } from '@rstar/messaging';
import { createLogger } from '@rstar/telemetry';
import { Archiver } from './archiver';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const quiet = createLogger('test', { write: () => {} });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function toolResult(runId: string, stdout: string): RstarEvent {
  return makeEvent('RunFailed', { runId, streamId: `run-${runId}`, key: `${runId}:same-id`, producer: 'test', data: { error: stdout } });
}

/**
 * Two appends are in flight at once (one fills while the other commits). These tests hold the first
 * batch back before it reaches Postgres, so that without ordering the second would commit first.
 */
describe('Archiver: a batch never commits ahead of an earlier one over the same stream', () => {
  const schema = `arch${process.pid}${Date.now().toString(36)}`;
  let store: EventStore;

  beforeAll(async () => {
    store = await EventStore.connect({ connectionString: PG_URL, schema });
    await store.migrate();
  });
  afterAll(async () => {
    await store?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
  });

  /** The store, with its first append delayed by `holdMs` and, when `failFirst`, then failed. */
  function slowFirstAppend(failFirst: boolean, holdMs = 400): { calls: string[][]; restore: () => void } {
    const original = store.appendBatch.bind(store);
    const calls: string[][] = [];
    store.appendBatch = async (events: readonly RstarEvent[]) => {
      const n = calls.push(events.map((e) => (e.data as { error: string }).error));
      if (n === 1) {
        await sleep(holdMs);
        if (failFirst) throw new Error('connection reset (injected)');
      }
      return original(events);
    };
    return { calls, restore: () => void (store.appendBatch = original) };
  }

  async function run(runId: string, failFirst: boolean) {
    const bus = new InProcessBus();
    const archiver = new Archiver(bus, store, { durable: `archiver-${runId}`, logger: quiet, maxWaitMs: 5 });
    const held = slowFirstAppend(failFirst);
    try {
      await archiver.start();
      await bus.publish(toolResult(runId, 'early copy'));
      await sleep(100); // the first batch has gone out and is held
      await bus.publish(toolResult(runId, 'later copy'));
      for (let i = 0; i < 200 && (await store.count(runId)) + (await store.quarantined(runId)).length < 2; i++) await sleep(50);
      await archiver.stop();
      return { calls: held.calls, archived: await store.readRunSnapshot(runId), quarantined: await store.quarantined(runId) };
    } finally {
      held.restore();
    }
  }

  it('the early copy of a squatted id is the event and the later one the collision, though the later batch was ready first', async () => {
    const r = await run('order-ok', false);
    expect(r.calls).toEqual([['early copy'], ['later copy']]);
    expect(r.archived.map((e) => (e.data as { error: string }).error)).toEqual(['early copy']);
    expect(r.quarantined.map((q) => [q.kind, JSON.parse(q.payload).data.error])).toEqual([['id_collision', 'later copy']]);
  });

  it('when the earlier batch fails, the later one is failed too and both are redelivered in stream order', async () => {
    const r = await run('order-fail', true);
    // The later batch never reached the store before the failed one was appended again.
    expect(r.calls[0]).toEqual(['early copy']);
    expect(r.calls.findIndex((c) => c.includes('later copy'))).toBeGreaterThanOrEqual(r.calls.findIndex((c, i) => i > 0 && c.includes('early copy')));
    expect(r.archived.map((e) => (e.data as { error: string }).error)).toEqual(['early copy']);
    expect(r.quarantined.map((q) => [q.kind, JSON.parse(q.payload).data.error])).toEqual([['id_collision', 'later copy']]);
  });
});
