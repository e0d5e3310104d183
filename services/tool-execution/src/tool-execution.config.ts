import { baseServiceEnv, intVar, optionalVar } from '@rstar/nest-runtime';
import { CODE_JUDGE_DEFAULT_TIMEOUT_MS, COMPAT_OUTPUT_CHARS, DEFAULT_MAXIMA, SANDBOX_FUSION_DEFAULT_TIMEOUT_MS } from '@rstar/sandbox';
import { z } from 'zod';

/**
 * Default request body limit: one request at the sandbox's own maxima (1 MiB of code, 16 MiB of stdin)
 * fits even if every byte took a two-character JSON escape (`\n`, `\"`), plus 1 MiB for the rest of the
 * body. A 32-submission code-judge batch of rStar2's ~7 KB programs is ~0.3 MB.
 */
export const TOOL_EXECUTION_BODY_LIMIT_BYTES = 2 * (DEFAULT_MAXIMA.codeBytes + DEFAULT_MAXIMA.inputBytes) + (1 << 20);

/** Default HTTP port of tool-execution (README's port table). */
export const TOOL_EXECUTION_PORT = 3002;

/**
 * tool-execution's settings: the base ones (PORT default 3002, HOST, RSTAR_NATS_URL — `off` serves HTTP
 * only, e.g. as a drop-in sandbox for another RL framework — RSTAR_STREAM, RSTAR_SUBJECT_PREFIX) and the
 * sandbox pool's: RSTAR_SANDBOX_WORKERS (zygotes; default twice the CPUs, at least 4),
 * RSTAR_SANDBOX_QUEUE_LIMIT (requests waiting before `overloaded`, default 4096), RSTAR_SANDBOX_MAX_TIMEOUT_MS
 * (the largest per-call time limit a request may ask for; larger ones are clamped), RSTAR_SANDBOX_ISOLATION
 * (`bwrap`, the default, or an explicit `none`), RSTAR_PYTHON (the
 * interpreter; default `.venv/bin/python`), RSTAR_TOOL_EXECUTE_SUBJECT (NATS request/reply subject,
 * default `tool.execute`), RSTAR_TOOL_DURABLE (the JetStream consumer of ToolCallRequested, default
 * `tool-execution`), RSTAR_ACK_WAIT_MS (that consumer's ack wait: how long a killed instance's calls wait before
 * another instance gets them, default 90000; a call in progress heartbeats every third of it), RSTAR_HTTP_BODY_LIMIT_BYTES (largest request body, default
 * {@link TOOL_EXECUTION_BODY_LIMIT_BYTES}, 35 MiB; larger ones get a 413 `invalid_request` naming it), and
 * the drop-in routes' defaults, taken from the systems they replace: RSTAR_SANDBOX_FUSION_TIMEOUT_MS
 * (`/run_code` without `run_timeout`, default 10000 as SandboxFusion), RSTAR_CODE_JUDGE_TIMEOUT_MS
 * (`/run*`, default 10000 as code-judge), RSTAR_DROP_IN_OUTPUT_CHARS (characters kept per stream on both,
 * default 1048576: SandboxFusion's 1 MiB). Time limits are still clamped to RSTAR_SANDBOX_MAX_TIMEOUT_MS.
 */
export const toolExecutionEnv = baseServiceEnv(TOOL_EXECUTION_PORT).extend({
  RSTAR_SANDBOX_WORKERS: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(1).max(1024).optional()).describe('a number of sandbox workers, e.g. 8'),
  RSTAR_SANDBOX_QUEUE_LIMIT: intVar(4096, 1, 'the most requests that may wait, e.g. 4096'),
  RSTAR_SANDBOX_MAX_TIMEOUT_MS: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(100).optional()).describe('milliseconds, e.g. 60000'),
  RSTAR_PYTHON: optionalVar('a Python 3 interpreter path'),
  RSTAR_SANDBOX_ISOLATION: z
    .enum(['bwrap', 'none'])
    .default('bwrap')
    .describe('bwrap (the default: programs run inside bubblewrap; without it the service is not ready) or none (rlimits only, programs see the host: only on a machine that is itself a sandbox)'),
  RSTAR_TOOL_EXECUTE_SUBJECT: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'must be a NATS subject').default('tool.execute').describe('a NATS subject, e.g. tool.execute'),
  RSTAR_HTTP_BODY_LIMIT_BYTES: intVar(TOOL_EXECUTION_BODY_LIMIT_BYTES, 1024, 'bytes, e.g. 36700160'),
  RSTAR_SANDBOX_FUSION_TIMEOUT_MS: intVar(SANDBOX_FUSION_DEFAULT_TIMEOUT_MS, 100, 'milliseconds, e.g. 10000'),
  RSTAR_CODE_JUDGE_TIMEOUT_MS: intVar(CODE_JUDGE_DEFAULT_TIMEOUT_MS, 100, 'milliseconds, e.g. 10000'),
  RSTAR_DROP_IN_OUTPUT_CHARS: intVar(COMPAT_OUTPUT_CHARS, 64, 'characters per stream, e.g. 1048576'),
  RSTAR_ACK_WAIT_MS: intVar(90_000, 1000, 'milliseconds, e.g. 90000'),
  RSTAR_TOOL_DURABLE: z.string().regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, "_" or "-"').default('tool-execution').describe('a durable consumer name'),
});

export type ToolExecutionEnv = z.infer<typeof toolExecutionEnv>;
