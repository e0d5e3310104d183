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
