import { extractAnswer, grade as gradeAnswer } from '@rstar/grader';

/** What a re-grade needs of a rollout (from `RolloutCompleted` and `RewardAssigned`). */
export interface RegradeInput {
  rolloutId: string;
  /** The full response text the rollout recorded. */
  responseText: string;
  gold: string;
  truncated: boolean;
  /** The problem text, when the rollout recorded it: the grader's problem-aware rules use it. */
  problem?: string;
}

/** A re-grade's verdict, shaped like the recorded `RewardAssigned`. */
export interface RegradeVerdict {
  reward: 0 | 1;
  correct: boolean;
  extracted: string | null;
  rule: string;
}

/** Re-grades one rollout; sync or async (a grader that offloads symbolic checks). */
export type RegradeFn = (input: RegradeInput) => RegradeVerdict | Promise<RegradeVerdict>;

/** The grading function a regrader wraps: `@rstar/grader`'s `grade(prediction, gold, {problem})` or a test's variant. */
export type AnswerGrader = (prediction: string, gold: string, opts?: { problem?: string }) => { correct: boolean; extracted: string | null; rule: string };

/**
 * The reward of a verdict (docs/design/protocol.md §4): 1 when the answer is equivalent to the gold, else 0; a
 * truncated rollout gets 0 whatever its verdict.
 */
export function rewardOf(correct: boolean, truncated: boolean): 0 | 1 {
  return correct && !truncated ? 1 : 0;
}

/**
 * A {@link RegradeFn} over `grader` (default: today's `@rstar/grader` `grade`), as reward-grading
 * computes `RewardAssigned`: grade the full response against the gold, reward by {@link rewardOf};
 * truncated rollouts are recorded as not correct, under rule `truncated` (services/reward-grading `rewardFor`).
 * With `cache` (default true) verdicts are memoised by (extracted answer, gold, problem): `grade` depends
 * on the response only through its extracted answer, and a group's rollouts repeat answers often.
 */
export function createRegrader(opts: { grader?: AnswerGrader; cache?: boolean } = {}): RegradeFn {
  const grader = opts.grader ?? gradeAnswer;
  const cache = opts.cache === false ? null : new Map<string, { correct: boolean; extracted: string | null; rule: string }>();
  return (r) => {
    let v: { correct: boolean; extracted: string | null; rule: string } | undefined;
    let key: string | null = null;
    if (cache) {
      key = JSON.stringify([extractAnswer(r.responseText), r.gold, r.problem ?? null]);
      v = cache.get(key);
    }
    if (!v) {
      const g = grader(r.responseText, r.gold, r.problem === undefined ? undefined : { problem: r.problem });
      v = { correct: g.correct, extracted: g.extracted, rule: g.rule };
      if (key !== null) cache!.set(key, v);
    }
    // As reward-grading records it: a truncated rollout is never correct, and its rule is `truncated`.
    const correct = v.correct && !r.truncated;
    return { reward: rewardOf(v.correct, r.truncated), correct, extracted: v.extracted, rule: r.truncated ? 'truncated' : v.rule };
  };
}
