import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { groupTable, indexRun, readHistory, runSummary, stepTable } from '@rstar/replay';
import type { GroupEntity } from './entities/group.entity';
import type { RolloutEntity } from './entities/rollout.entity';
import type { RunEntity } from './entities/run.entity';
import type { StepEntity } from './entities/step.entity';
import { batchKeys, foldEvents, settleCounters, stepKey, type Working } from './projection.fold';
import { toGroupRow, toStepRow, toSummary } from './read-model.rows';

const FIXTURES = join(__dirname, '../../../test/fixtures/golden-run');

/** A seeded generator (mulberry32), so a failing order reproduces from its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * An archive order as a live run produces it: each event may land up to `window` places later than its
 * causal position (producers are archived by independent consumers), never far away.
 */
function archiveOrder<T>(xs: readonly T[], rnd: () => number, window: number): T[] {
  const out = [...xs];
  for (let i = 0; i < out.length; i++) {
    const j = Math.min(out.length - 1, i + Math.floor(rnd() * window));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

type Tables = { [K in keyof Working]: Working[K] };

/**
 * What the projector does per transaction, with a Map for each table: load only the rows the batch's keys
 * name (copies, as a SELECT returns), fold, count the earlier tool calls of new rollouts, write back the
 * dirty rows. A counter that a batch changes without marking its row dirty is lost here as in Postgres.
 */
function project(events: readonly RstarEvent[], batchSizes: () => number): Tables {
  const db: Tables = { runs: new Map(), steps: new Map(), groups: new Map(), rollouts: new Map(), calls: new Map() };
  for (let i = 0; i < events.length; ) {
    const batch = events.slice(i, (i += batchSizes())).map((event) => ({ event, archivedAt: new Date(1_700_000_000_000 + i) }));
    const k = batchKeys(batch);
    const pick = <V>(from: Map<string, V>, keys: Iterable<string>) => new Map([...keys].filter((x) => from.has(x)).map((x) => [x, structuredClone(from.get(x)!)]));
    const w: Working = {
      runs: pick(db.runs, k.runs),
      steps: pick(db.steps, k.steps.map((s) => stepKey(s.runId, s.step))),
      groups: pick(db.groups, k.groups),
      rollouts: pick(db.rollouts, k.rollouts),
      calls: pick(db.calls, k.calls),
    };
    const fold = foldEvents(w, batch);
    const earlier = new Map<string, number>();
    for (const c of db.calls.values()) if (fold.newRollouts.has(c.rolloutId)) earlier.set(c.rolloutId, (earlier.get(c.rolloutId) ?? 0) + 1);
    settleCounters(w, fold, earlier);
    for (const t of Object.keys(db) as Array<keyof Tables>) {
      for (const key of fold.dirty[t]) (db[t] as Map<string, unknown>).set(key, structuredClone((w[t] as Map<string, unknown>).get(key)));
    }
  }
  return db;
}

/** The read-model views of one run from the simulated tables, as the repository builds them. */
function views(db: Tables, runId: string) {
  const steps = [...db.steps.values()].filter((s) => s.runId === runId).sort((a, b) => a.step - b.step);
  const groups = [...db.groups.values()].filter((g) => g.runId === runId).sort((a, b) => a.step - b.step || a.promptIdx - b.promptIdx || (a.groupId < b.groupId ? -1 : 1));
  const rollouts = [...db.rollouts.values()];
  const members = (g: string) => rollouts.filter((r) => r.groupId === g).sort((a, b) => a.sampleIdx - b.sampleIdx || (a.rolloutId < b.rolloutId ? -1 : 1));
  const summary = toSummary(db.runs.get(runId)! as RunEntity);
  return {
    summary: { ...summary, eventsByType: { ...summary.eventsByType } },
    steps: steps.map((s) => toStepRow(s as StepEntity)),
    groups: groups.map((g) => toGroupRow(g as GroupEntity, members(g.groupId) as RolloutEntity[])),
  };
}

describe('the read-model fold is independent of archive order and batch boundaries', () => {
  const histories = [
    ['golden', readHistory(join(FIXTURES, 'events.jsonl'))],
    ['tiny standalone', readHistory(join(FIXTURES, 'tiny-standalone.jsonl'))],
  ] as const;

  for (const [name, events] of histories) {
    it(`${name}: 200 archive orders, each projected in random small batches, equal replay`, () => {
      const runId = events[0].runId;
      const ix = indexRun(events, runId);
      const want = { summary: runSummary(ix), steps: stepTable(ix), groups: groupTable(ix) };
      for (let seed = 1; seed <= 200; seed++) {
        const rnd = random(seed);
        const order = archiveOrder(events, rnd, 1 + Math.floor(rnd() * 60));
        const got = views(project(order, () => 1 + Math.floor(rnd() * 25)), runId);
        expect(got.steps, `seed ${seed}: step table`).toEqual(want.steps);
        expect(got.groups, `seed ${seed}: group table`).toEqual(want.groups);
        expect(got.summary, `seed ${seed}: run summary`).toEqual(want.summary);
      }
    });
  }

  it('a GroupResampled alone in its batch (no other event of its step) still moves the step counters', () => {
    const [, events] = histories[0];
    const runId = events[0].runId;
    const resampled = events.filter((e) => e.type === 'GroupResampled');
    const rest = events.filter((e) => e.type !== 'GroupResampled');
    // Everything else first, then each group decision in its own transaction.
    let i = 0;
    const sizes = [rest.length, ...resampled.map(() => 1)];
    const got = views(project([...rest, ...resampled], () => sizes[i++]), runId);
    const ix = indexRun(events, runId);
    expect(got.steps.map((s) => [s.groupsKept, s.groupsAllEqual, s.groupsTimedOut])).toEqual(stepTable(ix).map((s) => [s.groupsKept, s.groupsAllEqual, s.groupsTimedOut]));
    expect(stepTable(ix).some((s) => s.groupsKept > 0)).toBe(true);
  });
});
