import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_TYPES, RstarError, type EventType } from '@rstar/contracts';
import { ApiTokenSet } from './api-tokens';
import { EventSigner, EventVerifier, parsePrivateKey, parseTrustedKeys } from './event-signature';
import { inboxPrefixOf } from './nats-permissions';
import { isPrincipal } from './principals';

/** A security setting that is missing or unusable; `field` is the environment variable. */
export class SecurityConfigError extends RstarError {
  declare readonly field: string;
  constructor(message: string, field: string) {
    super('invalid_security_config', message, field);
  }
}

/** How a NATS client authenticates (nats.js authenticators take these). */
export type NatsAuth =
  | { kind: 'nkey'; seed: string }
  | { kind: 'password'; user: string; password: string }
  | { kind: 'creds'; creds: string };

/** TLS of a NATS client connection (file paths). */
export interface NatsClientTls {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/** What a process needs to talk to a secured NATS and to sign and check events. */
export interface BusSecurity {
  auth: NatsAuth | null;
  tls: NatsClientTls | null;
  /** `_INBOX_<principal>` when authenticated as a principal, so its replies stay its own. */
  inboxPrefix: string | null;
  signer: EventSigner | null;
  verifier: EventVerifier | null;
}

/** Every security setting of a process. */
export interface SecuritySettings extends BusSecurity {
  /** The bearer tokens its HTTP API accepts (empty = authentication off, the dev default). */
  apiTokens: ApiTokenSet;
  /** The token it sends to inference engines' admin routes, or null. */
  engineApiKey: string | null;
  /** `RSTAR_REQUIRE_AUTH`: every credential above must be configured, or the process refuses to start. */
  requireAuth: boolean;
  /** True when NATS credentials are configured (secured bus: services do not create the stream). */
  securedBus: boolean;
}

/** Every environment variable {@link securityFromEnv} reads, with what it holds (services validate and document them). */
export const SECURITY_ENV_VARS = {
  RSTAR_SECRETS_DIR: 'a folder holding the secrets below under their default file names (rstar security init writes one per principal)',
  RSTAR_NATS_NKEY_SEED: 'the NATS nkey user seed (SU...)',
  RSTAR_NATS_NKEY_SEED_FILE: 'a file with the NATS nkey seed (default <secrets>/nats.nk)',
  RSTAR_NATS_USER: 'a NATS user name (with RSTAR_NATS_PASSWORD or RSTAR_NATS_PASSWORD_FILE)',
  RSTAR_NATS_PASSWORD: 'the NATS password of RSTAR_NATS_USER',
  RSTAR_NATS_PASSWORD_FILE: 'a file with the NATS password of RSTAR_NATS_USER',
  RSTAR_NATS_CREDS_FILE: 'a NATS decentralized-JWT .creds file',
  RSTAR_NATS_TLS_CA_FILE: 'the CA of the NATS server certificate; turns client TLS on (default <secrets>/nats-ca.pem)',
  RSTAR_NATS_TLS_CERT_FILE: 'a client certificate for mutual TLS (with RSTAR_NATS_TLS_KEY_FILE)',
  RSTAR_NATS_TLS_KEY_FILE: 'the key of RSTAR_NATS_TLS_CERT_FILE',
  RSTAR_SIGNING_KEY: 'the Ed25519 private key (PKCS#8 PEM) this process signs its events with',
  RSTAR_SIGNING_KEY_FILE: 'a file with the signing key (default <secrets>/signing.pem)',
  RSTAR_SIGNING_KEY_ID: 'the key id of the signer (default: the service name)',
  RSTAR_TRUSTED_KEYS: 'JSON {"<keyId>": "<public key PEM>" or [...]} of the trusted signers',
  RSTAR_TRUSTED_KEYS_FILE: 'a file with the trusted keys (default <secrets>/trusted-keys.json)',
  RSTAR_VERIFY_EVENT_TYPES: 'comma-separated event types refused unless signed by their producer (default: every type; narrowing it is a weakening)',
  RSTAR_API_TOKENS: 'HTTP bearer tokens, "<scopes> <token|sha256:hex> [name]" per line or ";"',
  RSTAR_API_TOKENS_FILE: 'a file with the HTTP bearer tokens (default <secrets>/api-tokens.txt)',
  RSTAR_ENGINE_API_KEY: 'the token sent to the inference engines',
  RSTAR_ENGINE_API_KEY_FILE: 'a file with the engine token (default <secrets>/engine-api-key)',
  RSTAR_REQUIRE_AUTH: 'true = refuse to start without NATS credentials, a signing key, trusted keys and API tokens',
} as const;

/** The name of a security environment variable. */
export type SecurityEnvVar = keyof typeof SECURITY_ENV_VARS;

type Env = Record<string, string | undefined>;

/**
 * Read a process's security settings from its environment: each secret from `<NAME>` (the value) or
 * `<NAME>_FILE` (a path, e.g. a mounted Kubernetes Secret), else from `RSTAR_SECRETS_DIR/<default file>`.
 * `principal` is who this process is (the service name, or `cli`): the default key id and inbox prefix.
 * Nothing configured = the unsecured dev mode (no NATS auth, no signatures, HTTP open).
 * @throws SecurityConfigError naming the variable: an unreadable file, a bad key or token list, or (with
 * `RSTAR_REQUIRE_AUTH=true`) a missing credential.
 */
export function securityFromEnv(env: Env, principal: string): SecuritySettings {
  const dir = env.RSTAR_SECRETS_DIR || undefined;
  const secret = (name: string, file: string | null): string | null => {
    if (env[name]) return env[name]!;
    const path = env[`${name}_FILE`] || (dir && file && existsSync(join(dir, file)) ? join(dir, file) : undefined);
    if (!path) return null;
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      throw new SecurityConfigError(`${name}_FILE: cannot read ${path} (${(e as Error).message})`, `${name}_FILE`);
    }
  };
  const fileSetting = (name: string, file: string): string | undefined => {
    const path = env[name] || (dir && existsSync(join(dir, file)) ? join(dir, file) : undefined);
    if (path && !existsSync(path)) throw new SecurityConfigError(`${name}: ${path} does not exist`, name);
    return path;
  };

  let auth: NatsAuth | null = null;
  const creds = env.RSTAR_NATS_CREDS_FILE ? secret('RSTAR_NATS_CREDS', null) : null;
  const seed = secret('RSTAR_NATS_NKEY_SEED', 'nats.nk');
  if (creds) auth = { kind: 'creds', creds };
  else if (env.RSTAR_NATS_USER) {
    const password = secret('RSTAR_NATS_PASSWORD', null);
    if (password === null) throw new SecurityConfigError('RSTAR_NATS_USER is set without RSTAR_NATS_PASSWORD or RSTAR_NATS_PASSWORD_FILE', 'RSTAR_NATS_PASSWORD');
    auth = { kind: 'password', user: env.RSTAR_NATS_USER, password: password.trim() };
  } else if (seed) {
    const s = seed.trim();
    if (!/^SU[A-Z2-7]{56}$/.test(s)) throw new SecurityConfigError('RSTAR_NATS_NKEY_SEED: not an nkey user seed (58 characters starting with "SU")', 'RSTAR_NATS_NKEY_SEED');
    auth = { kind: 'nkey', seed: s };
  }

  const caFile = fileSetting('RSTAR_NATS_TLS_CA_FILE', 'nats-ca.pem');
  const certFile = fileSetting('RSTAR_NATS_TLS_CERT_FILE', 'nats-client.pem');
  const keyFile = fileSetting('RSTAR_NATS_TLS_KEY_FILE', 'nats-client-key.pem');
  if (!!certFile !== !!keyFile) throw new SecurityConfigError('RSTAR_NATS_TLS_CERT_FILE and RSTAR_NATS_TLS_KEY_FILE go together (mutual TLS)', certFile ? 'RSTAR_NATS_TLS_KEY_FILE' : 'RSTAR_NATS_TLS_CERT_FILE');
  const tls = caFile || certFile ? { caFile, certFile, keyFile } : null;

  const keyId = env.RSTAR_SIGNING_KEY_ID || principal;
  const keyPem = secret('RSTAR_SIGNING_KEY', 'signing.pem');
  const signer = keyPem ? new EventSigner({ keyId, privateKey: parsePrivateKey(keyPem, env.RSTAR_SIGNING_KEY ? 'RSTAR_SIGNING_KEY' : 'RSTAR_SIGNING_KEY_FILE') }) : null;

  const trustedJson = secret('RSTAR_TRUSTED_KEYS', 'trusted-keys.json');
  let verifier: EventVerifier | null = null;
  if (trustedJson) {
    // Every event is signed in secured mode, so every type is checked: an unsigned or foreign-signed event of any type is refused.
    const requiredTypes = (env.RSTAR_VERIFY_EVENT_TYPES || EVENT_TYPES.join(',')).split(',').map((s) => s.trim()).filter(Boolean);
    const unknown = requiredTypes.filter((t) => !(EVENT_TYPES as string[]).includes(t));
    if (unknown.length) throw new SecurityConfigError(`RSTAR_VERIFY_EVENT_TYPES: unknown event type(s) ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}`, 'RSTAR_VERIFY_EVENT_TYPES');
    verifier = new EventVerifier({ trustedKeys: parseTrustedKeys(trustedJson, env.RSTAR_TRUSTED_KEYS ? 'RSTAR_TRUSTED_KEYS' : 'RSTAR_TRUSTED_KEYS_FILE'), requiredTypes: requiredTypes as EventType[] });
  }

  const tokensText = secret('RSTAR_API_TOKENS', 'api-tokens.txt');
  const apiTokens = tokensText ? ApiTokenSet.parse(tokensText, env.RSTAR_API_TOKENS ? 'RSTAR_API_TOKENS' : 'RSTAR_API_TOKENS_FILE') : ApiTokenSet.none();
  const engineApiKey = secret('RSTAR_ENGINE_API_KEY', 'engine-api-key')?.trim() || null;

  const requireAuth = /^(1|true|yes|on)$/i.test(env.RSTAR_REQUIRE_AUTH ?? '');
  if (requireAuth) {
    const missing = [
      !auth && 'NATS credentials (RSTAR_NATS_NKEY_SEED_FILE, RSTAR_NATS_USER + RSTAR_NATS_PASSWORD_FILE or RSTAR_NATS_CREDS_FILE)',
      !signer && 'a signing key (RSTAR_SIGNING_KEY_FILE)',
      !verifier && 'trusted keys (RSTAR_TRUSTED_KEYS_FILE)',
      apiTokens.size === 0 && 'API tokens (RSTAR_API_TOKENS_FILE)',
    ].filter(Boolean);
    if (missing.length) {
      throw new SecurityConfigError(`RSTAR_REQUIRE_AUTH is on but ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not configured; set them or RSTAR_SECRETS_DIR (rstar security init writes them)`, 'RSTAR_REQUIRE_AUTH');
    }
  }
  return {
    auth,
    tls,
    inboxPrefix: auth && isPrincipal(principal) ? inboxPrefixOf(principal) : null,
    signer,
    verifier,
    apiTokens,
    engineApiKey,
    requireAuth,
    securedBus: auth !== null,
  };
}
