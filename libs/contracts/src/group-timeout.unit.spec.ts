import { describe, expect, it } from 'vitest';
import { ConfigError, GROUP_BUDGET, groupTimeoutBudgetS, groupTimeoutReason, parseRunConfig } from './index';

const stage = { name: 'rl', steps: 2, promptsPerStep: 2, groupSize: 4, maxResponseTokens: 64, lr: 0.001 };

describe('the group time budget', () => {
  it('given no groupTimeoutS, then the budget grows with the stage maxResponseTokens and maxTurns', () => {
    const c = parseRunConfig({ stages: [stage], policy: { model: { context: 4096 } } });
    expect(c.roc.groupTimeoutS).toBeUndefined();
    const small = groupTimeoutBudgetS(c, { maxResponseTokens: 112, maxTurns: 3 });
    expect(small).toBe(Math.ceil(GROUP_BUDGET.floorS + 112 / GROUP_BUDGET.tokensPerS + (GROUP_BUDGET.toolFactor * 3 * c.tool.timeoutMs) / 1000));
    expect(small).toBe(336);
    expect(groupTimeoutBudgetS(c, { maxResponseTokens: 8192, maxTurns: 10 })).toBe(1200);
    expect(groupTimeoutBudgetS(c, { maxResponseTokens: 12288, maxTurns: 15 })).toBe(1649);
    // A longer tool limit gives every turn more time.
    expect(groupTimeoutBudgetS({ ...c, tool: { ...c.tool, timeoutMs: 10_000 } }, { maxResponseTokens: 112, maxTurns: 3 })).toBe(small + 36);
  });

  it('given groupTimeoutS, then it overrides the budget of every stage', () => {
    const c = parseRunConfig({ stages: [stage], roc: { groupTimeoutS: 42 } });
    expect(groupTimeoutBudgetS(c, { maxResponseTokens: 8192, maxTurns: 10 })).toBe(42);
  });

  it('given a bad maxExtraGroups or groupTimeoutS, then a ConfigError names the field', () => {
    for (const [roc, field] of [[{ maxExtraGroups: -1 }, 'roc.maxExtraGroups'], [{ maxExtraGroups: 1.5 }, 'roc.maxExtraGroups'], [{ groupTimeoutS: 0 }, 'roc.groupTimeoutS']] as const) {
      let err: unknown = null;
      try {
        parseRunConfig({ stages: [stage], roc });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).field).toBe(field);
      expect((err as ConfigError).message).toContain(field);
    }
    expect(parseRunConfig({ stages: [stage], roc: { maxExtraGroups: 3 } }).roc.maxExtraGroups).toBe(3);
    // Absent stays absent, so configs (and the RunStarted events carrying them) without it are unchanged.
    expect('maxExtraGroups' in parseRunConfig({ stages: [stage] }).roc).toBe(false);
  });

  it('names what a timed-out group waited for', () => {
    const reason = groupTimeoutReason({
      budgetS: 336, waitedS: 340, expected: 8, received: 5, unseen: 1,
      missing: [{ rolloutId: 'rollout:r:0:1:3', waitingFor: 'completion' }, { rolloutId: 'rollout:r:0:1:6', waitingFor: 'reward' }],
    });
    expect(reason).toBe('no rewards for 3 of 8 rollouts after 340 s (budget 336 s): 1 without RolloutCompleted [3], 1 without RewardAssigned [6], 1 never requested');
  });
});
