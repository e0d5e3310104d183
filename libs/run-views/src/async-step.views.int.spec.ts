import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { readHistory } from '@rstar/replay';
import { EventStoreRunViews } from './event-store.reader';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const GOLDEN = join(__dirname, '../../../test/fixtures/golden-run/events.jsonl');
const RUN = 'golden-run-1';
const schema = `rva${process.pid}${Date.now().toString(36)}`;

/**
 * The step page of an async step (docs/design/protocol.md §10): the golden run's step 1 recorded as if its
 * rollouts had been sampled under policy version 0 (one version behind the trainer's 1) and one kept rollout
 * discarded as stale; each rollout shows the version that sampled it, its staleness and the discard.
 */
describe('EventStoreRunViews: policy version and staleness of each rollout of an async step', () => {
  let store: EventStore;
  let views: EventStoreRunViews;
  const events: RstarEvent[] = JSON.parse(JSON.stringify(readHistory(GOLDEN)));
  const step1 = events.filter((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted' && e.data.step === 1);
  for (const c of step1) c.data.policyVersion = 0;
  const group = events.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.step === 1 && e.data.kept.length > 0)!;
  const stale = group.data.kept[0];
  const discard = makeEvent('RolloutDiscarded', {
    runId: RUN, streamId: streams.rollout(stale), key: stale, producer: 'optimization',
    data: { rolloutId: stale, groupId: group.data.groupId, step: 1, reason: 'stale', policyVersion: 0, trainPolicyVersion: 1, staleness: 1, maxStaleness: 0 },
  });

  beforeAll(async () => {
    store = await EventStore.connect({ connectionString: PG_URL, schema });
    await store.appendBatch([...events, discard]);
    views = new EventStoreRunViews(store);
  });
  afterAll(async () => {
    await store?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  it('each rollout of the step carries its policy version, its staleness and whether it was discarded', async () => {
    const d = await views.step(RUN, 1);
    expect(d.rollouts.length).toBe(step1.length);
    for (const r of d.rollouts) expect(r).toMatchObject({ policyVersion: 0, staleness: 1, discarded: r.rolloutId === stale });
    const s0 = await views.step(RUN, 0);
    for (const r of s0.rollouts) expect(r).toMatchObject({ policyVersion: 0, staleness: 0, discarded: false });
  });
});
