import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { EventStore, formatChainReport } from '@rstar/event-store';
import { checkArchiveIntegrity, formatIntegrity, formatVerifyReport, groupTable, indexRun, readHistory, rolloutTranscript, stepTable, verifyRun } from '@rstar/replay';
import { EventStoreRunViews } from './event-store.reader';
import { RunViewNotFoundError, RunViewQueryError } from './errors';
import { followRun } from './live.follower';
import type { RunLiveUpdate } from './views';
import { until } from '@rstar/testing';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const GOLDEN = join(__dirname, '../../../test/fixtures/golden-run/events.jsonl');
const RUN = 'golden-run-1';
const schema = `rv${process.pid}${Date.now().toString(36)}`;

describe('EventStoreRunViews over a real Postgres archive holding the golden run', () => {
  let store: EventStore;
  let views: EventStoreRunViews;
  const events = readHistory(GOLDEN);
  const ix = indexRun(events, RUN);

  beforeAll(async () => {
    store = await EventStore.connect({ connectionString: PG_URL, schema });
    await store.appendBatch(events);
    views = new EventStoreRunViews(store);
  });
  afterAll(async () => {
    await store?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  it('lists the run with its status, preset, last step and reward', async () => {
    const [run] = await views.listRuns({ limit: 10 });
    const last = events.filter((e) => e.type === 'StepCompleted').at(-1) as RstarEvent<'StepCompleted'>;
    expect(run).toMatchObject({
      runId: RUN, status: 'completed', preset: 'synthetic', mode: 'standalone', seed: 20250101, step: 1, totalSteps: 2, stepsCompleted: 2,
      lastReward: last.data.metrics.rewardMean, startedAt: '2025-01-01T00:00:00.000Z',
    });
  });

  it('the run page has one metrics row per step, the stage span and the config', async () => {
    const r = await views.run(RUN);
    expect(r.steps.map((s) => s.step)).toEqual([0, 1]);
    const completed = events.filter((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted');
    r.steps.forEach((s, i) => expect(s.metrics).toMatchObject(completed[i].data.metrics));
    const optimized = events.filter((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized');
    expect(r.steps.map((s) => s.metrics.clipFraction)).toEqual(optimized.map((e) => e.data.clipFraction));
    expect(r.steps[0].optimized?.batchHash).toBe((events.find((e) => e.type === 'StepOptimized') as RstarEvent<'StepOptimized'>).data.batchHash);
    expect(r.stages).toEqual([{ name: 'synthetic', firstStep: 0, lastStep: 1 }]);
    expect(r.config).toEqual((events[0] as RstarEvent<'RunStarted'>).data.config);
    expect(r.cursor).toMatch(/^\d+-\d+$/);
  });

  it("a step page holds replay's step row and group table, every rollout with its counters", async () => {
    for (const step of [0, 1]) {
      const s = await views.step(RUN, step);
      expect(s.step).toEqual(stepTable(ix)[step]);
      expect(s.groups).toEqual(groupTable(ix, { step }));
      expect(s.rollouts).toHaveLength(12);
      const first = ix.rollouts.get(s.rollouts[0].rolloutId)!;
      expect(s.rollouts[0]).toMatchObject({ toolCalls: first.completed!.toolCalls, reward: first.reward!.reward, responseTokens: first.completed!.responseTokenIds.length });
    }
    await expect(views.step(RUN, 7)).rejects.toThrow(RunViewNotFoundError);
  });

  it('pages the run-wide rollouts list, filtered by outcome', async () => {
    const ids: string[] = [];
    for (let offset = 0; ; offset += 10) {
      const p = await views.rollouts(RUN, { offset, limit: 10, outcome: 'all' });
      expect(p.total).toBe(24);
      if (p.items.length === 0) break;
      ids.push(...p.items.map((r) => r.rolloutId));
    }
    expect(new Set(ids).size).toBe(24);
    const correct = await views.rollouts(RUN, { offset: 0, limit: 100, outcome: 'correct' });
    expect(correct.total).toBe([...ix.rollouts.values()].filter((r) => r.reward?.correct).length);
    expect(correct.items.every((r) => r.correct)).toBe(true);
    await expect(views.rollouts(RUN, { offset: 0, limit: 10, outcome: 'kept' })).rejects.toThrow(RunViewQueryError);
  });

  it("a rollout page is replay's transcript, with the token view decoded by the char tokenizer", async () => {
    const id = [...ix.rollouts.keys()][5];
    const r = await views.rollout(RUN, id);
    expect(r.transcript).toEqual(rolloutTranscript(ix, id));
    const c = ix.rollouts.get(id)!.completed!;
    expect(r.tokens?.tokenizer).toBe('char');
    expect(r.tokens?.response.map((t) => t.text).join('')).toBe(c.responseText);
    expect(r.tokens?.response.map((t) => t.mask)).toEqual(c.lossMask);
    await expect(views.rollout(RUN, 'rollout:nope')).rejects.toThrow(RunViewNotFoundError);
    await expect(views.rollout('no-such-run', id)).rejects.toThrow(/run no-such-run not found/);
  });

  it('the replay view prints the lines of `rstar replay verify --no-exec`', async () => {
    // The archive's integrity lines first (hash chain, checkpoints), as the CLI prints them for an archived run.
    const integrity = formatIntegrity(await checkArchiveIntegrity(store, RUN)).split('\n');
    expect(integrity[0]).toMatch(/^hash chain: ok \(/);
    expect(integrity[0]).toBe(formatChainReport(await store.verifyChain(RUN)));
    const r = await views.replay(RUN, {});
    expect(r.verify.lines).toEqual([...integrity, ...formatVerifyReport(await verifyRun(events)).split('\n')]);
    expect(r.verify.chain.ok).toBe(true);
    const one = await views.replay(RUN, { step: 1 });
    expect(one.verify.lines).toEqual([...integrity, ...formatVerifyReport(await verifyRun(events, { step: 1 })).split('\n')]);
  });

  it('sandbox statistics count every tool call by status', async () => {
    const s = await views.sandbox(RUN);
    const calls = events.filter((e): e is RstarEvent<'ToolCallCompleted'> => e.type === 'ToolCallCompleted');
    expect(s.calls).toBe(calls.length);
    for (const st of new Set(calls.map((c) => c.data.status))) expect(s.byStatus[st]).toBe(calls.filter((c) => c.data.status === st).length);
    expect(s.latencyMs.max).toBe(Math.round(Math.max(...calls.map((c) => c.data.wallMs)) * 100) / 100);
    expect(s.timeline.points.reduce((a, p) => a + p.calls, 0)).toBe(calls.length);
  });

  it('follows a live run: each newly archived step and reward arrives once, after the cursor', async () => {
    const run = `live-${schema}`;
    const started = makeEvent('RunStarted', { runId: run, streamId: streams.run(run), key: run, producer: 't', data: { config: { name: 'live', stages: [{ name: 'rl', steps: 3 }] }, seed: 1, codeVersion: 'x', mode: 'distributed' } });
    await store.appendBatch([started]);
    const detail = await views.run(run);
    expect(detail.steps).toEqual([]);
    const got: RunLiveUpdate[] = [];
    const stop = followRun(views, run, detail.cursor, (u) => got.push(u), { intervalMs: 50 });
    try {
      for (let step = 0; step < 3; step++) {
        const rid = `rollout:${run}:${step}:0:0`;
        await store.appendBatch([
          makeEvent('StepStarted', { runId: run, streamId: streams.step(run, step), key: `${run}:${step}`, producer: 't', data: { step, stage: 'rl', promptIds: ['p'], policyVersion: step } }),
          makeEvent('RewardAssigned', { runId: run, streamId: streams.rollout(rid), key: rid, producer: 't', data: { rolloutId: rid, groupId: `group:${run}:${step}:0`, step, reward: 1, correct: true, extracted: '1', gold: '1', normalizedPrediction: null, normalizedGold: null, rule: 'exact', ms: 0 } }),
          makeEvent('StepCompleted', { runId: run, streamId: streams.step(run, step), key: `${run}:${step}`, producer: 't', data: { step, stage: 'rl', metrics: { rewardMean: step / 10 } } }),
        ]);
        await until(() => got.flatMap((u) => u.steps).some((s) => s.step === step && s.status === 'completed'), `step ${step} to arrive`);
      }
    } finally {
      await stop();
    }
    const steps = got.flatMap((u) => u.steps.filter((s) => s.status === 'completed'));
    expect(steps.map((s) => [s.step, s.metrics.rewardMean, s.policyVersion])).toEqual([[0, 0, 0], [1, 0.1, 1], [2, 0.2, 2]]);
    expect(got.flatMap((u) => u.rollouts.map((r) => r.step))).toEqual([0, 1, 2]);
    expect(got.at(-1)!.run).toMatchObject({ runId: run, step: 2, stepsCompleted: 3, totalSteps: 3, status: 'running', lastReward: 0.2 });
    expect(await views.changes(run, got.at(-1)!.cursor)).toBeNull();
    await expect(views.changes(run, 'garbage')).rejects.toThrow(RunViewQueryError);
  });
});
