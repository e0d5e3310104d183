import { baseServiceEnv, storeEnv } from '@rstar/nest-runtime';
import { z } from 'zod';

/** Default HTTP port of optimization (README's port table). */
export const OPTIMIZATION_PORT = 3005;

/**
 * optimization's settings: the base ones (PORT default 3005, HOST, RSTAR_NATS_URL, RSTAR_STREAM,
 * RSTAR_SUBJECT_PREFIX), the archive (RSTAR_DATABASE_URL, required: a run resumes from it; RSTAR_DB_SCHEMA),
 * RSTAR_ENGINES (comma-separated `kind=url`: the engines a run's config leaves out or names without URL, which get
 * its start weights; required),
 * RSTAR_CHECKPOINT_DIR (default `runs`; must be readable by the engines at the same path),
 * RSTAR_RUNS_DURABLE (consumer of RunStarted, default `optimization-runs`), RSTAR_TRAINER_URL (the trainer
 * worker of `trainer.kind: worker` runs, e.g. http://127.0.0.1:31000; optional) and RSTAR_BATCH_DIR (where
 * batch files for the worker go; the worker must read them at the same path; default
 * `<RSTAR_CHECKPOINT_DIR>/batches`), RSTAR_RUNS_ACK_WAIT_MS (how long after a killed instance's last heartbeat
 * the next one gets its RunStarted and resumes the run; default 60000 ms, at least 1000; the live instance
 * heartbeats every third of it).
 */
export const optimizationEnv = baseServiceEnv(OPTIMIZATION_PORT).extend(storeEnv.shape).extend({
  RSTAR_ENGINES: z
    .string({ error: 'is not set' })
    .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[a-z]+=https?:\/\/\S+$/, 'each entry must be kind=url')).min(1, 'names no engine'))
    .describe('the engines policy-serving uses, e.g. builtin=http://127.0.0.1:30000'),
  RSTAR_CHECKPOINT_DIR: z.string().min(1).default('runs').describe('a directory the engines can read, e.g. /checkpoints'),
  RSTAR_TRAINER_URL: z.string().url('must be the trainer worker\'s URL').optional().describe('the trainer worker, e.g. http://127.0.0.1:31000'),
  RSTAR_BATCH_DIR: z.string().min(1).optional().describe('a directory the trainer worker reads at the same path, e.g. /shared/batches'),
  RSTAR_RUNS_ACK_WAIT_MS: z.coerce.number().int().min(1000).default(60_000).describe('milliseconds, e.g. 60000'),
  RSTAR_RUNS_DURABLE: z.string().regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, "_" or "-"').default('optimization-runs').describe('a durable consumer name'),
});

export type OptimizationEnv = z.infer<typeof optimizationEnv>;
