import { baseServiceEnv, intVar, optionalVar } from '@rstar/nest-runtime';
import { z } from 'zod';

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
 * `tool-execution`).
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
  RSTAR_TOOL_DURABLE: z.string().regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, "_" or "-"').default('tool-execution').describe('a durable consumer name'),
});

export type ToolExecutionEnv = z.infer<typeof toolExecutionEnv>;
