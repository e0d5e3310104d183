import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { groupTable } from './group-table.projection';
import { readHistory } from './history.jsonl';
import { formatGroupTable } from './replay.formatter';
import { formatRolloutVersions, rolloutVersions, sampledVersions, stepRolloutVersions } from './rollout-versions.projection';
import { indexRun } from './run.index';

const GOLDEN = join(__dirname, '../../../test/fixtures/golden-run/events.jsonl');

describe("a rollout's policy versions (partial rollouts, protocol.md §8)", () => {
  it('are the distinct versions of its start, its turns and their segments, ascending; staleness is the trainer\'s version minus the start', () => {
    expect(sampledVersions(2, [])).toEqual([2]);
    expect(sampledVersions(2, [{ policyVersion: 2 }, { policyVersion: null }])).toEqual([2]);
    expect(sampledVersions(3, [{ policyVersion: 3, segments: [{ policyVersion: 3 }, { policyVersion: 5 }] }, { policyVersion: 4 }])).toEqual([3, 4, 5]);
    const v = rolloutVersions(3, [{ policyVersion: 3, segments: [{ policyVersion: 3 }, { policyVersion: 4 }] }], 4);
    expect(v).toEqual({ startedAt: 3, versions: [3, 4], trainedAt: 4, staleness: 1, partial: true, discarded: false });
    expect(formatRolloutVersions(v)).toBe('v3→v4 · trained at v4 · staleness 1');
    expect(formatRolloutVersions(rolloutVersions(1, [], 4, true))).toBe('v1 · discarded at v4 · staleness 3');
    expect(formatRolloutVersions(rolloutVersions(1, [], null))).toBe('v1 · not trained yet');
  });

  it("`replay show`'s group table prints them per rollout, a rollout with segments of two versions marked partial", () => {
    const events: RstarEvent[] = JSON.parse(JSON.stringify(readHistory(GOLDEN)));
    const turn = events.find((e): e is RstarEvent<'TurnGenerated'> => e.type === 'TurnGenerated' && e.data.rolloutId.endsWith(':1:0:0') && e.data.turn === 0)!;
    turn.data.policyVersion = 1;
    turn.data.segments = [{ fromToken: 0, policyVersion: 1 }, { fromToken: 4, policyVersion: 2 }];
    const ix = indexRun(events);
    const versions = stepRolloutVersions(ix, 1);
    expect(versions.size).toBe(12);
    const partial = turn.data.rolloutId;
    for (const [id, v] of versions) expect(v, id).toMatchObject({ startedAt: 1, versions: id === partial ? [1, 2] : [1], trainedAt: 1, staleness: 0 });
    const text = formatGroupTable(groupTable(ix, { step: 1 }), versions);
    const lines = text.split('\n').filter((l) => l.startsWith('rollout:'));
    expect(lines).toHaveLength(12);
    expect(lines.find((l) => l.startsWith(`${partial} `))).toMatch(/ v1→v2 · trained at v1 · staleness 0 · partial$/);
    expect(lines.filter((l) => / v1 · trained at v1 · staleness 0$/.test(l))).toHaveLength(11);
    // Without versions the table is as before: no policy column.
    expect(formatGroupTable(groupTable(ix, { step: 1 }))).not.toContain('policy versions');
  });
});
