import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { generateSyntheticRun } from '@rstar/testing';
import { createRegrader, groupTable, indexRun, readHistory, rolloutTranscript, runSummary, stepTable } from '@rstar/replay';
import { READ_MODEL_TABLES, ReadModels } from './index';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const FIXTURES = join(__dirname, '../../../test/fixtures/golden-run');
const schema = `rm${process.pid}${Date.now().toString(36)}`;

/** A seeded shuffle (mulberry32), so an unlucky order reproduces. */
function shuffled<T>(xs: readonly T[], seed: number): T[] {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

describe('read models (typeorm) equal the in-memory projections of libs/replay', () => {
  let store: EventStore;
  let rm: ReadModels;
  const runs: string[] = [];

  /** Every archived event of a run, in archive order (what `rstar replay show` indexes). */
  const archived = async (runId: string): Promise<RstarEvent[]> => {
    return store.readRunSnapshot(runId);
  };
  const dump = async (): Promise<Record<string, unknown[]>> => {
    const out: Record<string, unknown[]> = {};
    for (const t of READ_MODEL_TABLES) out[t] = await rm.dataSource.query(`SELECT * FROM "${schema}_read"."${t}" ORDER BY 1, 2`);
    return out;
  };

  beforeAll(async () => {
    store = await EventStore.connect({ connectionString: PG_URL, schema });
    rm = await ReadModels.open({ connectionString: PG_URL, schema });
    // The golden history and the tiny standalone run, as recorded; a fresh synthetic run (real grader and RoC)
    // appended in a shuffled order across many small transactions, so the fold sees a rollout's events in any order.
    const golden = readHistory(join(FIXTURES, 'events.jsonl'));
    const tiny = readHistory(join(FIXTURES, 'tiny-standalone.jsonl'));
    const fresh = await generateSyntheticRun({ grade: createRegrader(), runId: `synthetic-${schema}`, seed: 7, steps: 3, promptsPerStep: 4, samples: 6, keep: 4, responseChars: 60 });
    for (const e of [golden, tiny, shuffled(fresh, 11)]) {
      for (let i = 0; i < e.length; i += 37) await store.appendBatch(e.slice(i, i + 37));
    }
    runs.push(...new Set([...golden, ...tiny, ...fresh].map((e) => e.runId)));
  }, 120_000);

  afterAll(async () => {
    await rm?.close();
    await store?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_read" CASCADE`);
    await c.end();
  });

  it("typeorm's migrations create exactly what the entities describe (empty schema diff)", async () => {
    const diff = await rm.dataSource.driver.createSchemaBuilder().log();
    expect(diff.upQueries.map((q) => q.query)).toEqual([]);
  });

  it('two projectors on one archive apply every event exactly once, in batches that split runs and rollouts', async () => {
    const total = await store.count();
    const [a, b] = await Promise.all([rm.projector({ batchSize: 53 }).catchUp(), rm.projector({ batchSize: 29 }).catchUp()]);
    expect(a + b).toBe(total);
    expect(a).toBeGreaterThan(0);
    expect(await rm.projector().lag()).toBe(0);
    expect((await rm.projector().checkpoint()).events).toBe(total);
  });

  it('run summary, step table, group table and rollouts equal replay on the golden, tiny and fresh runs', async () => {
    expect(runs.length).toBe(3);
    for (const runId of runs) {
      const ix = indexRun(await archived(runId), runId);
      expect(await rm.repository.runSummary(runId), `summary of ${runId}`).toEqual(runSummary(ix));
      expect(await rm.repository.stepTable(runId), `steps of ${runId}`).toEqual(stepTable(ix));
      expect(await rm.repository.groupTable(runId), `groups of ${runId}`).toEqual(groupTable(ix));
      const step = ix.steps.at(-1)!.step;
      expect(await rm.repository.groupTable(runId, { step })).toEqual(groupTable(ix, { step }));
      const rollouts = await rm.repository.rollouts(runId, { limit: 10_000 });
      expect(rollouts.length).toBe(ix.rollouts.size);
      for (const r of rollouts) {
        const t = rolloutTranscript(ix, r.rolloutId);
        expect(r, r.rolloutId).toMatchObject({
          groupId: t.groupId, step: t.step, sampleIdx: t.sampleIdx, promptId: t.promptId, policyVersion: t.policyVersion, engineId: t.engineId,
          turns: t.counters?.turns ?? null, toolCalls: t.counters?.toolCalls ?? null, toolErrors: t.counters?.toolErrors ?? null,
          responseTokens: t.responseTokens, modelTokens: t.modelTokens, truncated: t.truncated, finishReason: t.finishReason,
          reward: t.reward?.reward ?? null, rule: t.reward?.rule ?? null, resample: t.resample?.status ?? 'pending',
        });
        const calls = await rm.repository.toolCalls(r.rolloutId);
        expect(calls.map((c) => [c.callId, c.status, c.wallMs]), `tool calls of ${r.rolloutId}`).toEqual(
          t.turns.flatMap((turn) => turn.toolCalls.map((c) => [c.callId, c.status, c.wallMs])),
        );
      }
    }
    expect((await rm.repository.listRuns()).map((r) => r.runId).sort()).toEqual([...runs].sort());
    const running = await rm.repository.runningRunIds();
    for (const runId of runs) expect(running.includes(runId)).toBe((await rm.repository.runSummary(runId))!.status === 'running');
  });

  it('a rebuild from position 0 gives identical tables', async () => {
    const before = await dump();
    expect(before.rollouts.length).toBeGreaterThan(0);
    expect(before.tool_calls.length).toBeGreaterThan(0);
    const applied = await rm.projector({ batchSize: 500 }).rebuild();
    expect(applied).toBe(await store.count());
    expect(await dump()).toEqual(before);
  });

  it('events archived later are picked up incrementally', async () => {
    const more = await generateSyntheticRun({ grade: createRegrader(), runId: `late-${schema}`, seed: 3, steps: 1, promptsPerStep: 2, samples: 4, keep: 2, responseChars: 40 });
    await store.appendBatch(more);
    expect(await rm.projector().lag()).toBe(more.length);
    // The resampler's restart set: a run with events the projector has not applied yet is included.
    expect(await rm.openRunIds()).toContain(`late-${schema}`);
    expect(await rm.projector().catchUp()).toBe(more.length);
    const open = await rm.openRunIds();
    expect(open).toEqual(expect.arrayContaining(await rm.repository.runningRunIds()));
    for (const runId of open) expect((await rm.repository.runSummary(runId))!.status).toBe('running');
    const ix = indexRun(more);
    expect(await rm.repository.stepTable(ix.runId)).toEqual(stepTable(ix));
    expect(await rm.repository.runSummary('no-such-run')).toBeNull();
  });
});
