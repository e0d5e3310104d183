import { describe, expect, it } from 'vitest';
import { keepCounts, resampleGroup, rocPenalties, rngFromSeed, seedOf, GrpoInputError, type GroupRollout, type ResampleMode } from './index';

/** n rollouts; `rewards[i]` and optional counters per index. */
function group(rewards: number[], counters: Partial<GroupRollout>[] = []): GroupRollout[] {
  return rewards.map((reward, i) => ({
    rolloutId: `r${i}`,
    reward,
    toolCalls: 2,
    toolErrors: 0,
    answerBlocks: 1,
    turns: 3,
    ...counters[i],
  }));
}
const base = { groupId: 'group:run:0:0', runSeed: 7, step: 0 };
const run = (rollouts: GroupRollout[], G: number, mode: ResampleMode = 'weighted', extra: Partial<typeof base> = {}) =>
  resampleGroup({ ...base, ...extra, rollouts, G, mode });

describe('rocPenalties', () => {
  it('given 1 erroneous of 4 calls and one answer, then p_err = 0.25 and p_format = 0', () => {
    expect(rocPenalties({ toolCalls: 4, toolErrors: 1, answerBlocks: 1, turns: 5 })).toEqual({ pErr: 0.25, pFormat: 0 });
  });
  it('given no tool call, then p_err = 0.5', () => {
    expect(rocPenalties({ toolCalls: 0, toolErrors: 0, answerBlocks: 1, turns: 1 }).pErr).toBe(0.5);
  });
  it('given no answer block, then p_format = 1', () => {
    expect(rocPenalties({ toolCalls: 1, toolErrors: 1, answerBlocks: 0, turns: 2 })).toEqual({ pErr: 1, pFormat: 1 });
  });
  it('given 3 answers in 4 turns, then p_format = (3-1)/4; given 9 answers in 2 turns it caps at 1', () => {
    expect(rocPenalties({ toolCalls: 1, toolErrors: 0, answerBlocks: 3, turns: 4 }).pFormat).toBe(0.5);
    expect(rocPenalties({ toolCalls: 1, toolErrors: 0, answerBlocks: 9, turns: 2 }).pFormat).toBe(1);
  });
  it('given more errors than calls or a negative count, then it throws naming the field', () => {
    expect(() => rocPenalties({ toolCalls: 1, toolErrors: 2, answerBlocks: 1, turns: 1 })).toThrow(/toolErrors/);
    const err = (() => { try { rocPenalties({ toolCalls: -1, toolErrors: 0, answerBlocks: 1, turns: 1 }); } catch (e) { return e; } })();
    expect(err).toBeInstanceOf(GrpoInputError);
    expect((err as GrpoInputError).field).toBe('toolCalls');
    expect((err as GrpoInputError).code).toBe('grpo_invalid_input');
  });
});

describe('keepCounts (pass ratio + minimum per side)', () => {
  it('given 2G = 32 with 12 positives and G = 16, then k_pos = round(12*16/32) = 6 and k_neg = 10', () => {
    expect(keepCounts(12, 20, 16)).toEqual({ kPos: 6, kNeg: 10 });
  });
  it('given an odd positive count, then the half rounds up', () => {
    expect(keepCounts(7, 25, 16)).toEqual({ kPos: 4, kNeg: 12 });
  });
  it('given one negative among 32, then that negative is kept (min(2, 1) = 1) and 15 positives', () => {
    expect(keepCounts(31, 1, 16)).toEqual({ kPos: 15, kNeg: 1 });
  });
  it('given one positive among 32, then the single positive is kept (round would give 1 anyway) ', () => {
    expect(keepCounts(1, 31, 16)).toEqual({ kPos: 1, kNeg: 15 });
  });
  it('given 2 positives among 32 (round gives 1), then the minimum of 2 positives holds', () => {
    expect(keepCounts(2, 30, 16)).toEqual({ kPos: 2, kNeg: 14 });
  });
  it('given 30 positives and 2 negatives, then 2 negatives are kept (round would leave 1)', () => {
    expect(keepCounts(30, 2, 16)).toEqual({ kPos: 14, kNeg: 2 });
  });
  it('given a group smaller than 2G but larger than G, then the ratio is over what was received', () => {
    expect(keepCounts(10, 10, 16)).toEqual({ kPos: 8, kNeg: 8 });
  });
  it('given at most G rollouts, then all are kept', () => {
    expect(keepCounts(3, 5, 16)).toEqual({ kPos: 3, kNeg: 5 });
  });
  it('given G = 3, then the minimums are lowered to fit (positives first on a tie), the ratio rule within them', () => {
    expect(keepCounts(3, 3, 3)).toEqual({ kPos: 1, kNeg: 2 });
    expect(keepCounts(5, 1, 3)).toEqual({ kPos: 2, kNeg: 1 });
  });
});

describe('resampleGroup', () => {
  it('given all rewards 1, then the group is dropped as all_equal with every id dropped', () => {
    const r = run(group(new Array(32).fill(1)), 16);
    expect(r.groupDropped).toBe('all_equal');
    expect(r.kept).toEqual([]);
    expect(r.dropped).toHaveLength(32);
    expect(r.penalties).toHaveLength(32);
  });
  it('given all rewards 0, then the group is dropped as all_equal', () => {
    expect(run(group(new Array(8).fill(0)), 4).groupDropped).toBe('all_equal');
  });

  it('given topk with a tie, then the lowest penalties are kept and the tie goes to rollout order', () => {
    // 8 rollouts, G = 4: positives r0..r3 (k_pos = round(4*4/8) = 2), negatives r4..r7 (k_neg = 2).
    const rollouts = group([1, 1, 1, 1, 0, 0, 0, 0], [
      { toolCalls: 2, toolErrors: 1 }, // penalty 0.5
      { toolCalls: 2, toolErrors: 0 }, // 0
      { toolCalls: 2, toolErrors: 0 }, // 0 (tie with r1, later)
      { toolCalls: 0, toolErrors: 0 }, // 0.5 (no call)
    ]);
    const r = run(rollouts, 4, 'topk');
    expect(r.kept.filter((id) => ['r0', 'r1', 'r2', 'r3'].includes(id))).toEqual(['r1', 'r2']);
    expect(r.kPos).toBe(2);
    expect(r.kNeg).toBe(2);
    expect(r.kept).toHaveLength(4);
    expect([...r.kept, ...r.dropped].sort()).toEqual(rollouts.map((x) => x.rolloutId).sort());
  });

  it('given topk with a three-way tie for two slots, then the first two in rollout order win', () => {
    const rollouts = group([1, 1, 1, 1, 1, 1, 0, 0, 0, 0], [{ toolErrors: 1 }, {}, {}, {}, { toolErrors: 2 }, { toolErrors: 2 }]);
    // k_pos = round(6*4/10) = 2; r1, r2, r3 tie at 0.
    expect(run(rollouts, 4, 'topk').kept.filter((id) => Number(id.slice(1)) < 6)).toEqual(['r1', 'r2']);
  });

  it('given weighted mode, then a clean positive is far likelier kept than an erroneous one', () => {
    // 1 clean positive (penalty 0 -> weight 1e6) vs 5 fully erroneous (penalty 1 -> weight ~1); k_pos = 3.
    const rollouts = group([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0], [{}, ...new Array(5).fill({ toolErrors: 2 })]);
    let cleanKept = 0;
    for (let step = 0; step < 50; step++) if (run(rollouts, 6, 'weighted', { step }).kept.includes('r0')) cleanKept++;
    expect(cleanKept).toBe(50);
  });

  it('given weighted mode with equal penalties, then positives are picked roughly uniformly', () => {
    const rollouts = group([1, 1, 1, 1, 0, 0, 0, 0]);
    const counts = new Map<string, number>();
    for (let step = 0; step < 400; step++) {
      for (const id of run(rollouts, 4, 'weighted', { step }).kept) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    // Each positive is kept with probability 1/2: 200 of 400 expected; 140..260 is > 6 sigma wide.
    for (const id of ['r0', 'r1', 'r2', 'r3']) expect(counts.get(id)).toBeGreaterThan(140);
    for (const id of ['r0', 'r1', 'r2', 'r3']) expect(counts.get(id)).toBeLessThan(260);
  });

  it('given one negative among 32 rollouts, then the negative is kept and 15 positives', () => {
    const r = run(group([...new Array(31).fill(1), 0]), 16);
    expect(r.kept).toContain('r31');
    expect(r.kPos).toBe(15);
    expect(r.kept).toHaveLength(16);
  });

  it('given a group smaller than G with mixed rewards, then it is kept whole', () => {
    const r = run(group([1, 0, 1]), 16);
    expect(r.kept).toEqual(['r0', 'r1', 'r2']);
    expect(r.dropped).toEqual([]);
    expect(r.groupDropped).toBeNull();
  });

  it('given mode none (plain GRPO), then G are kept uniformly with no regard to penalties', () => {
    const rollouts = group([1, 1, 1, 1, 0, 0, 0, 0], [{}, { toolErrors: 2 }, { toolErrors: 2 }, { toolErrors: 2 }]);
    const r = run(rollouts, 4, 'none');
    expect(r.kept).toHaveLength(4);
    expect(r.kPos + r.kNeg).toBe(4);
    let erroneousKept = 0;
    for (let step = 0; step < 200; step++) erroneousKept += run(rollouts, 4, 'none', { step }).kept.filter((id) => ['r1', 'r2', 'r3'].includes(id)).length;
    // Uniform: each of the 3 erroneous positives is kept half the time: 300 of 600 expected.
    expect(erroneousKept).toBeGreaterThan(220);
  });

  it('given the same inputs, then a replay gives the same pick and the recorded seed', () => {
    const rollouts = group([1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0], [{ toolErrors: 1 }, {}, { toolCalls: 0 }]);
    const a = run(rollouts, 6);
    const b = run(rollouts, 6);
    expect(b).toEqual(a);
    expect(a.seed).toBe(seedOf(7, 0, 'group:run:0:0'));
    expect(run(rollouts, 6, 'weighted', { runSeed: 8 }).seed).not.toBe(a.seed);
  });

  it('given the pick, then kept and dropped are disjoint, in input order, and cover the group', () => {
    const rollouts = group(Array.from({ length: 32 }, (_, i) => (i % 3 === 0 ? 1 : 0)));
    const r = run(rollouts, 16);
    expect(r.kept).toHaveLength(16);
    const idx = (id: string) => Number(id.slice(1));
    expect(r.kept.map(idx)).toEqual([...r.kept.map(idx)].sort((x, y) => x - y));
    expect(new Set([...r.kept, ...r.dropped]).size).toBe(32);
  });

  it('given an empty group, duplicate ids or G < 1, then it throws GrpoInputError', () => {
    expect(() => run([], 4)).toThrow(GrpoInputError);
    expect(() => run([...group([1]), ...group([0])], 4)).toThrow(/duplicate/);
    expect(() => run(group([1, 0]), 0)).toThrow(/G must be/);
  });
});

describe('prng', () => {
  it('given a seed, then the sfc32 stream is fixed (bit-identical replay across versions)', () => {
    const seed = seedOf(1, 2, 'g');
    expect(seed).toMatch(/^[0-9a-f]{32}$/);
    const a = rngFromSeed(seed);
    const b = rngFromSeed(seed);
    const xs = Array.from({ length: 5 }, () => a());
    expect(xs).toEqual(Array.from({ length: 5 }, () => b()));
    for (const x of xs) expect(x >= 0 && x < 1).toBe(true);
  });
  it('given a malformed seed, then it throws', () => {
    expect(() => rngFromSeed('xyz')).toThrow(/32 lowercase hex/);
  });
});
