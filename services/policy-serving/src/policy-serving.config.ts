import { SCHEDULING_POLICIES } from '@rstar/engines';
import { baseServiceEnv, intVar } from '@rstar/nest-runtime';
import { z } from 'zod';

/** Default HTTP port of policy-serving (README's port table). */
export const POLICY_SERVING_PORT = 3001;

/**
 * policy-serving's settings: the base ones (PORT default 3001, HOST, RSTAR_NATS_URL, RSTAR_STREAM,
 * RSTAR_SUBJECT_PREFIX) and RSTAR_ENGINES (comma-separated `kind=url`, required), RSTAR_SCHEDULER (default
 * kv-budget) — both only for what a run's config leaves out (its `RolloutRequested` carry its engines and scheduler), RSTAR_COMPACT_PROMPT (`1`: prompts without the system turn, as the tiny built-in policy was
 * trained; `0`: the full rStar2 template; default `auto`: compact when every engine is built-in), RSTAR_ROLLOUT_CONCURRENCY
 * (default 256), RSTAR_POLICY_VERSION (the version the engines hold at start, default 0),
 * RSTAR_INSTANCE_ID (this replica's stable name, default `default`: a restart with the same id resumes its
 * durables and gets back the rollouts, tool results and policy update the dead process held; give each
 * replica its own id), RSTAR_ACK_WAIT_MS (default 30000), RSTAR_TOKENIZER_DIR (a Hugging Face model
 * directory: its tokenizer.json and chat template tokenize and render the rollouts; default: the built-in
 * tiny policy's tokenizer).
 */
export const policyServingEnv = baseServiceEnv(POLICY_SERVING_PORT).extend({
  RSTAR_ENGINES: z
    .string({ error: 'is not set' })
    .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[a-z]+=https?:\/\/\S+$/, 'each entry must be kind=url')).min(1, 'names no engine'))
    .describe('e.g. "sglang=http://10.0.0.5:30000,builtin=http://127.0.0.1:30000"'),
  RSTAR_SCHEDULER: z.enum(SCHEDULING_POLICIES).default('kv-budget').describe(`one of ${SCHEDULING_POLICIES.join(', ')}`),
  RSTAR_COMPACT_PROMPT: z.enum(['0', '1', 'auto']).default('auto').describe('1 (compact, the built-in tiny policy), 0 (the full template) or auto'),
  RSTAR_ROLLOUT_CONCURRENCY: intVar(256, 1, 'the most rollouts handled at once, e.g. 256'),
  RSTAR_POLICY_VERSION: intVar(0, 0, 'the policy version the engines hold at start, e.g. 0'),
  RSTAR_INSTANCE_ID: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "_" or "-" (it names durable consumers)').default('default').describe("this replica's stable name, e.g. the pod name"),
  RSTAR_ACK_WAIT_MS: intVar(30_000, 1_000, 'milliseconds, e.g. 30000'),
  RSTAR_TOKENIZER_DIR: z.string().min(1).optional().describe('the model directory the engines serve, e.g. /models/qwen2.5-7b'),
});

export type PolicyServingEnv = z.infer<typeof policyServingEnv>;
