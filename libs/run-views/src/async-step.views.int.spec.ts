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
 * rollouts had been sampled under policy version 0 (one version behind the trainer's 1), one of them a partial
 * rollout continued under version 1 (§8), and one kept rollout discarded as stale; each rollout shows the
 * versions that sampled it, the trainer's version, its staleness and the discard.
 */
describe('EventStoreRunViews: policy version and staleness of each rollout of an async step', () => {
  let store: EventStore;
  let views: EventStoreRunViews;
  const events: RstarEvent[] = JSON.parse(JSON.stringify(readHistory(GOLDEN)));
  const step1 = events.filter((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted' && e.data.step === 1);
  for (const c of step1) c.data.policyVersion = 0;
  const group = events.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.step === 1 && e.data.kept.length > 0)!;
  const stale = group.data.kept[0];
  // A partial rollout (protocol.md §8): requested with partial rollouts, its first turn continued under version 1
  // after 5 tokens, its second turn sampled wholly under version 1.
  const partial = step1.find((c) => c.data.rolloutId !== group.data.kept[0] && c.data.turns >= 2)!.data.rolloutId;
  for (const e of events) {
    if (e.type === 'RolloutRequested' && e.data.rolloutId === partial) e.data.partialRollouts = true;
    if (e.type === 'TurnGenerated' && e.data.rolloutId === partial) {
      e.data.policyVersion = e.data.turn === 0 ? 0 : 1;
      if (e.data.turn === 0) e.data.segments = [{ fromToken: 0, policyVersion: 0 }, { fromToken: 5, policyVersion: 1 }];
    }
  }
  // A rollout whose turns carry segments but whose request did not ask for partial rollouts keeps its one version
  // (only a partial rollout's turns are read).
  const unasked = step1.find((c) => c.data.rolloutId !== partial && c.data.rolloutId !== group.data.kept[0])!.data.rolloutId;
  const unaskedTurn = events.find((e): e is RstarEvent<'TurnGenerated'> => e.type === 'TurnGenerated' && e.data.rolloutId === unasked)!;
  unaskedTurn.data.segments = [{ fromToken: 0, policyVersion: 0 }, { fromToken: 1, policyVersion: 1 }];
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
    for (const r of d.rollouts) expect(r).toMatchObject({ policyVersion: 0, trainedAt: 1, staleness: 1, discarded: r.rolloutId === stale });
    for (const r of d.rollouts) expect(r.policyVersions, r.rolloutId).toEqual(r.rolloutId === partial ? [0, 1] : [0]);
    const s0 = await views.step(RUN, 0);
    for (const r of s0.rollouts) expect(r).toMatchObject({ policyVersion: 0, policyVersions: [0], trainedAt: 0, staleness: 0, discarded: false });
  });
});
