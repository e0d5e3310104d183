import { BUS_ROLES, isPrincipal, securityFromEnv } from '@rstar/security';
import type { JetStreamBusOptions } from './jetstream.bus';

/**
 * The bus settings every distributed service reads from its environment, in one place so no service
 * forgets one: `RSTAR_NATS_URL` (default `nats://127.0.0.1:4222`), and for isolation (tests, several
 * runs on one broker) `RSTAR_STREAM` and `RSTAR_SUBJECT_PREFIX`; plus {@link securedBusOptionsFromEnv}.
 */
export function jetStreamOptionsFromEnv(name: string, env: NodeJS.ProcessEnv = process.env): JetStreamBusOptions {
  return {
    servers: env.RSTAR_NATS_URL || 'nats://127.0.0.1:4222',
    stream: env.RSTAR_STREAM || undefined,
    subjectPrefix: env.RSTAR_SUBJECT_PREFIX || undefined,
    name,
    replicas: streamReplicasFromEnv(env),
    maxBytes: streamMaxBytesFromEnv(env),
    ...securedBusOptionsFromEnv(name, env),
  };
}

/** The secured-mode part of {@link JetStreamBusOptions}. */
export type SecuredBusOptions = Pick<JetStreamBusOptions, 'auth' | 'tls' | 'inboxPrefix' | 'signer' | 'verifier' | 'manageStream'>;

/**
 * The bus security of `principal` (a service name, or `cli` for the operator's commands) from its
 * environment (`securityFromEnv`: NATS credentials, TLS, signing key, trusted keys). With NATS
 * credentials the bus is in secured mode, where only a principal whose role manages the stream (the
 * control plane) creates it; everyone else waits for it. Without any, the open dev mode (unchanged).
 * @throws SecurityConfigError naming the variable of a bad or missing secret.
 */
export function securedBusOptionsFromEnv(principal: string, env: Record<string, string | undefined> = process.env): SecuredBusOptions {
  const s = securityFromEnv(env, principal);
  return {
    auth: s.auth,
    tls: s.tls,
    inboxPrefix: s.inboxPrefix,
    signer: s.signer,
    verifier: s.verifier,
    manageStream: !s.securedBus || (isPrincipal(principal) && BUS_ROLES[principal].manageStream === true),
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
