import { baseServiceEnv, intVar } from '@rstar/nest-runtime';
import { z } from 'zod';

/** Default HTTP port of reward-grading (README's port table). */
export const REWARD_GRADING_PORT = 3003;

/**
 * reward-grading's settings: the base ones (PORT default 3003, HOST, RSTAR_NATS_URL, RSTAR_STREAM,
 * RSTAR_SUBJECT_PREFIX), RSTAR_GRADER_SYMBOLIC_TIMEOUT_MS (limit of one sympy check in the sandbox,
 * default 4000; past it the reward is 0 with rule `timeout`), RSTAR_GRADER_SANDBOX_WORKERS (its own
 * small sandbox pool for those checks, default 2), RSTAR_GRADER_DURABLE (consumer name, default
 * `reward-grading`; replicas share it), RSTAR_ACK_WAIT_MS (that consumer's ack wait: how long a killed instance's
 * rollouts wait before another instance grades them, default 30000; a grading in progress heartbeats every third of it).
 */
export const rewardGradingEnv = baseServiceEnv(REWARD_GRADING_PORT).extend({
  RSTAR_GRADER_SYMBOLIC_TIMEOUT_MS: intVar(4000, 100, 'milliseconds, e.g. 4000'),
  RSTAR_GRADER_SANDBOX_WORKERS: intVar(2, 1, 'a number of sandbox workers, e.g. 2'),
  RSTAR_ACK_WAIT_MS: intVar(30_000, 1000, 'milliseconds, e.g. 30000'),
  RSTAR_GRADER_DURABLE: z.string().regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, "_" or "-"').default('reward-grading').describe('a durable consumer name'),
});

export type RewardGradingEnv = z.infer<typeof rewardGradingEnv>;
