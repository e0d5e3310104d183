import { BUS_ROLES, isPrincipal, securityFromEnv } from '@rstar/security';
import type { JetStreamBusOptions } from './jetstream.bus';

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
