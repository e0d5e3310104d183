import type { JetStreamBusOptions } from './jetstream.bus';

/**
 * The bus settings every distributed service reads from its environment, in one place so no service
 * forgets one: `RSTAR_NATS_URL` (default `nats://127.0.0.1:4222`), and for isolation (tests, several
 * runs on one broker) `RSTAR_STREAM` and `RSTAR_SUBJECT_PREFIX`.
 */
export function jetStreamOptionsFromEnv(name: string, env: NodeJS.ProcessEnv = process.env): JetStreamBusOptions {
  return {
    servers: env.RSTAR_NATS_URL || 'nats://127.0.0.1:4222',
    stream: env.RSTAR_STREAM || undefined,
    subjectPrefix: env.RSTAR_SUBJECT_PREFIX || undefined,
    name,
  };
}
