import * as transport from '@nats-io/transport-node';
import type { NatsAuth, NatsClientTls } from '@rstar/security';

/** nats.js authenticators (re-exported by transport-node; typed here, see nats-compat.ts). */
interface Authenticators {
  nkeyAuthenticator(seed: Uint8Array): unknown;
  credsAuthenticator(creds: Uint8Array): unknown;
  usernamePasswordAuthenticator(user: string, pass: string): unknown;
}
const auth = transport as unknown as Authenticators;

/** The security part of nats.js connect options: authenticator, TLS and inbox prefix. */
export interface NatsSecurityConnectOptions {
  authenticator?: unknown;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  inboxPrefix?: string;
}

/**
 * nats.js connect options for a principal's credentials: an nkey seed (challenge signed, the seed never
 * sent), a user/password, or a decentralized-JWT `.creds` file; TLS (required when given: the client
 * refuses a server that does not offer it) with a CA and optionally a client certificate; and the
 * principal's inbox prefix, which its subscribe permission is limited to.
 */
export function natsSecurityConnectOptions(o: { auth?: NatsAuth | null; tls?: NatsClientTls | null; inboxPrefix?: string | null }): NatsSecurityConnectOptions {
  const out: NatsSecurityConnectOptions = {};
  const enc = new TextEncoder();
  if (o.auth?.kind === 'nkey') out.authenticator = auth.nkeyAuthenticator(enc.encode(o.auth.seed));
  else if (o.auth?.kind === 'creds') out.authenticator = auth.credsAuthenticator(enc.encode(o.auth.creds));
  else if (o.auth?.kind === 'password') out.authenticator = auth.usernamePasswordAuthenticator(o.auth.user, o.auth.password);
  if (o.tls) {
    out.tls = {};
    if (o.tls.caFile) out.tls.caFile = o.tls.caFile;
    if (o.tls.certFile) out.tls.certFile = o.tls.certFile;
    if (o.tls.keyFile) out.tls.keyFile = o.tls.keyFile;
  }
  if (o.inboxPrefix) out.inboxPrefix = o.inboxPrefix;
  return out;
}
