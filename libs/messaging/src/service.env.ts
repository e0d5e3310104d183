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
    replicas: streamReplicasFromEnv(env),
    maxBytes: streamMaxBytesFromEnv(env),
  };
}

/**
 * `RSTAR_STREAM_REPLICAS` as a number (undefined when unset or empty).
 * @throws Error naming the variable when it is not an integer 1..5.
 */
export function streamReplicasFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.RSTAR_STREAM_REPLICAS;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 5) {
    throw new Error(`RSTAR_STREAM_REPLICAS is "${raw}": must be an integer 1..5 (3 on a 3-node NATS cluster); unset it on a single server`);
  }
  return n;
}

/**
 * `RSTAR_STREAM_MAX_BYTES` as a number of bytes (undefined when unset or empty).
 * @throws Error naming the variable when it is not a positive integer.
 */
export function streamMaxBytesFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.RSTAR_STREAM_MAX_BYTES;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`RSTAR_STREAM_MAX_BYTES is "${raw}": must be a positive integer of bytes (e.g. 150000000000); unset it for no limit`);
  return n;
}
