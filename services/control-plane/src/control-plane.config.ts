import { baseServiceEnv, storeEnv } from '@rstar/nest-runtime';
import { z } from 'zod';

/** Default HTTP port of control-plane (README's port table). */
export const CONTROL_PLANE_PORT = 3000;

/**
 * control-plane's settings: the base ones (PORT default 3000, HOST, RSTAR_NATS_URL, RSTAR_STREAM,
 * RSTAR_SUBJECT_PREFIX), the archive (RSTAR_DATABASE_URL, required; RSTAR_DB_SCHEMA) and
 * RSTAR_ARCHIVER_ACK_WAIT_MS: how long the archiver's unacked batches wait before JetStream redelivers
 * them (after a crash, to the restarted control plane); default 30000, at least 1000. The dashboard:
 * RSTAR_LIVE_POLL_MS (live feed poll period, default 1000) and RSTAR_UI_DIR (built dashboard folder).
 */
export const controlPlaneEnv = baseServiceEnv(CONTROL_PLANE_PORT).extend(storeEnv.shape).extend({
  RSTAR_ARCHIVER_ACK_WAIT_MS: z.coerce.number().int().min(1000).default(30_000).describe('milliseconds, e.g. 30000'),
  RSTAR_LIVE_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(1000).describe('milliseconds between polls of the archive for the dashboard\'s live feed, e.g. 1000'),
  RSTAR_UI_DIR: z.string().default('').describe('folder of the built dashboard (default dist/apps/dashboard under the repository)'),
});

export type ControlPlaneEnv = z.infer<typeof controlPlaneEnv>;
