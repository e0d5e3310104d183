import { expect } from 'vitest';
import type { EventType, RstarEvent } from '@rstar/contracts';
import type { RunShape } from './distributed-pipeline';

/**
 * The exactly-once checks of a finished run's archived events: no id twice; one RunStarted, one
 * RunCompleted, no RunFailed; every requested rollout completed and rewarded exactly once; every group
 * resampled once and none on timeout; every step completed once; each rollout's TurnGenerated events numbered 0..turns-1.
 */
export function expectRunExactlyOnce(events: readonly RstarEvent[], shape: RunShape): void {
  const count = (type: EventType) => events.filter((e) => e.type === type).length;
  expect(new Set(events.map((e) => e.id)).size, 'distinct event ids').toBe(events.length);
  expect(count('RunFailed')).toBe(0);
  expect(count('RunStarted')).toBe(1);
  expect(count('RunCompleted')).toBe(1);
  const per = (type: EventType, key: (e: RstarEvent) => string) => {
    const m = new Map<string, number>();
    for (const e of events) if (e.type === type) m.set(key(e), (m.get(key(e)) ?? 0) + 1);
    return m;
  };
  const rid = (e: RstarEvent) => (e.data as { rolloutId: string }).rolloutId;
  const gid = (e: RstarEvent) => (e.data as { groupId: string }).groupId;
  const rollouts = shape.steps * shape.prompts * shape.group * shape.oversample;
  const requested = per('RolloutRequested', rid);
  expect(requested.size).toBe(rollouts);
  const completed = per('RolloutCompleted', rid);
  const rewarded = per('RewardAssigned', rid);
  for (const r of requested.keys()) {
    expect(completed.get(r), `RolloutCompleted of ${r}`).toBe(1);
    expect(rewarded.get(r), `RewardAssigned of ${r}`).toBe(1);
  }
  expect(completed.size).toBe(rollouts);
  expect(rewarded.size).toBe(rollouts);
  const groups = new Set(events.filter((e) => e.type === 'RolloutRequested').map(gid));
  expect(groups.size).toBe(shape.steps * shape.prompts);
  const resampled = per('GroupResampled', gid);
  for (const g of groups) expect(resampled.get(g), `GroupResampled of ${g}`).toBe(1);
  // Every group decided on all its rollouts: none dropped because its rollouts stopped arriving.
  const timedOut = events.filter((e) => e.type === 'GroupResampled' && (e.data as { groupDropped: string | null }).groupDropped === 'timeout');
  expect(timedOut.map((e) => (e.data as { groupId: string }).groupId), 'groups dropped on timeout').toEqual([]);
  const steps = per('StepCompleted', (e) => String((e.data as { step: number }).step));
  expect(steps.size).toBe(shape.steps);
  expect([...steps.values()].every((n) => n === 1)).toBe(true);
  const turnsOf = new Map<string, number[]>();
  for (const e of events) if (e.type === 'TurnGenerated') turnsOf.set(e.data.rolloutId, [...(turnsOf.get(e.data.rolloutId) ?? []), e.data.turn]);
  for (const c of events) {
    if (c.type !== 'RolloutCompleted') continue;
    const turns = (turnsOf.get(c.data.rolloutId) ?? []).sort((a, b) => a - b);
    expect(turns, `turns of ${c.data.rolloutId}`).toEqual(Array.from({ length: c.data.turns }, (_, k) => k));
  }
}
