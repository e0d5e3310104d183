import { baseServiceEnv, storeEnv } from '@rstar/nest-runtime';
import { z } from 'zod';

/** Default HTTP port of resampling (README's port table). */
export const RESAMPLING_PORT = 3004;

/**
 * resampling's settings: the base ones (PORT default 3004, HOST, RSTAR_NATS_URL, RSTAR_STREAM,
 * RSTAR_SUBJECT_PREFIX), the archive (RSTAR_DATABASE_URL, required: open groups are rebuilt from it after
 * a restart; RSTAR_DB_SCHEMA) and RSTAR_RESAMPLING_DURABLE (consumer name, default `resampling`).
 */
export const resamplingEnv = baseServiceEnv(RESAMPLING_PORT).extend(storeEnv.shape).extend({
  RSTAR_RESAMPLING_DURABLE: z.string().regex(/^[A-Za-z0-9_-]+$/, 'must be letters, digits, "_" or "-"').default('resampling').describe('a durable consumer name'),
});

export type ResamplingEnv = z.infer<typeof resamplingEnv>;
