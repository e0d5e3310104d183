import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createUser } from '@nats-io/nkeys';
import { generateApiToken, tokenDigest } from './api-tokens';
import { renderNatsAuthConfig, renderNscCommands, type NatsServerTls } from './nats-config.renderer';
import type { BusScope } from './nats-permissions';
import { PRINCIPALS, type Principal } from './principals';
import { SecurityConfigError } from './security.settings';

/** Options of {@link generateSecrets}. */
export interface GenerateSecretsOptions {
  /** Output folder (created; must be empty or absent). */
  outDir: string;
  principals?: readonly Principal[];
  scope?: BusScope;
  /** Server certificate for NATS client TLS; the CA file is copied to each principal as `nats-ca.pem`. */
  tls?: NatsServerTls;
}

/** What {@link generateSecrets} wrote. */
export interface GeneratedSecrets {
  outDir: string;
  /** Per principal: its secrets folder (`RSTAR_SECRETS_DIR`) and NATS public key. */
  principals: Record<string, { dir: string; natsPublicKey: string }>;
  /** The HTTP bearer tokens in clear, by name (also in `operator-tokens.txt`). */
  tokens: Record<string, string>;
  /** nats-server configuration fragment with the users and permissions. */
  natsAuthConfig: string;
  /** The inference engines' secrets folder (their `RSTAR_SECRETS_DIR`: the engine key's token list). */
  engineDir: string;
}

/**
 * The HTTP tokens the services accept: who holds each and its scopes. Each service has its own (`read`:
 * what one service asks another, e.g. readiness and state), written to its folder as `api-token`.
 */
const TOKENS: ReadonlyArray<{ name: string; scopes: string }> = [
  { name: 'operator', scopes: 'read,execute,admin' },
  { name: 'dashboard', scopes: 'read' },
  { name: 'tool-client', scopes: 'execute' },
  ...PRINCIPALS.filter((p) => p !== 'cli').map((p) => ({ name: `service-${p}`, scopes: 'read' })),
];

/**
 * The engines' own token list: the engine key (what policy-serving and optimization send: information,
 * generation and the weight-reload admin routes), and the operator's and dashboard's. The engine key is
 * accepted by engines only: no service lists it, so it cannot run code on tool-execution.
 */
const ENGINE_TOKENS: ReadonlyArray<{ name: string; scopes: string }> = [
  { name: 'engine-client', scopes: 'read,execute,admin' },
  { name: 'operator', scopes: 'read,execute,admin' },
  { name: 'dashboard', scopes: 'read' },
];

/** Principals that call the inference engines' admin routes. */
const ENGINE_CLIENTS: ReadonlySet<Principal> = new Set(['policy-serving', 'optimization']);

/**
 * Create every credential of a secured deployment in `outDir` (files 0600, folders 0700):
 * - `<principal>/` for each principal — its `RSTAR_SECRETS_DIR`: `nats.nk` (nkey seed), `signing.pem`
 *   (Ed25519 private key), `trusted-keys.json` (every principal's public key), `api-tokens.txt` (the
 *   accepted tokens as SHA-256 digests only), `api-token` (its own token), `engine-api-key` (the engine
 *   clients), `nats-ca.pem` (TLS);
 * - `engine/`: the inference engines' folder: `api-tokens.txt` (the engine key, operator and dashboard)
 *   and `engine-api-key` (SGLang's `--api-key`); the services do not accept the engine key;
 * - `nats-auth.conf`: the nats-server users (nkey public keys) and permissions; `nsc-users.sh`: the same
 *   for decentralized JWT auth;
 * - `trusted-keys.json`, `operator-tokens.txt` (the tokens in clear: give each to its holder, then delete).
 * @throws SecurityConfigError when `outDir` exists and is not empty (never overwrite keys).
 */
export function generateSecrets(o: GenerateSecretsOptions): GeneratedSecrets {
  const out = resolve(o.outDir);
  if (existsSync(out) && readdirSync(out).length) {
    throw new SecurityConfigError(`${out} is not empty; choose a new folder (existing keys are never overwritten)`, 'outDir');
  }
  mkdirSync(out, { recursive: true, mode: 0o700 });
  const write = (path: string, text: string) => {
    writeFileSync(path, text, { mode: 0o600 });
    chmodSync(path, 0o600);
  };
  const principals = o.principals ?? PRINCIPALS;
  const nats = principals.map((principal) => {
    const kp = createUser();
    return { principal, seed: new TextDecoder().decode(kp.getSeed()), nkey: kp.getPublicKey() };
  });
  const signing = principals.map((principal) => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    return { principal, privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
  });
  const trusted = JSON.stringify(Object.fromEntries(signing.map((s) => [s.principal, [s.publicPem]])), null, 2) + '\n';
  const tokens: Record<string, string> = Object.fromEntries([...TOKENS, ...ENGINE_TOKENS].map((t) => [t.name, generateApiToken()]));
  const tokenList = (list: typeof TOKENS, who: string) =>
    `# HTTP bearer tokens accepted by ${who}: <scopes> sha256:<digest> <name>. Add a line to rotate, remove the old one after.\n` +
    list.map((t) => `${t.scopes} ${tokenDigest(tokens[t.name])} ${t.name}`).join('\n') +
    '\n';
  const tokenFile = tokenList(TOKENS, 'the services');
  const natsAuthConfig = renderNatsAuthConfig(nats.map((n) => ({ principal: n.principal, nkey: n.nkey })), o.scope, o.tls);
  const result: GeneratedSecrets = { outDir: out, principals: {}, tokens, natsAuthConfig, engineDir: join(out, 'engine') };
  for (const n of nats) {
    const dir = join(out, n.principal);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    write(join(dir, 'nats.nk'), n.seed + '\n');
    write(join(dir, 'signing.pem'), signing.find((s) => s.principal === n.principal)!.privatePem);
    write(join(dir, 'trusted-keys.json'), trusted);
    write(join(dir, 'api-tokens.txt'), tokenFile);
    if (ENGINE_CLIENTS.has(n.principal)) write(join(dir, 'engine-api-key'), tokens['engine-client'] + '\n');
    if (tokens[`service-${n.principal}`]) write(join(dir, 'api-token'), tokens[`service-${n.principal}`] + '\n');
    if (n.principal === 'cli') write(join(dir, 'operator-token'), tokens.operator + '\n');
    if (o.tls?.caFile) write(join(dir, 'nats-ca.pem'), readFileSync(o.tls.caFile, 'utf8'));
    result.principals[n.principal] = { dir, natsPublicKey: n.nkey };
  }
  // The inference engines' RSTAR_SECRETS_DIR (`rstar serve engine`, SGLang's --api-key is the engine key).
  mkdirSync(join(out, 'engine'), { recursive: true, mode: 0o700 });
  write(join(out, 'engine', 'api-tokens.txt'), tokenList(ENGINE_TOKENS, 'the inference engines'));
  write(join(out, 'engine', 'engine-api-key'), tokens['engine-client'] + '\n');
  result.engineDir = join(out, 'engine');
  write(join(out, 'nats-auth.conf'), natsAuthConfig);
  write(join(out, 'nsc-users.sh'), renderNscCommands(principals, o.scope));
  write(join(out, 'trusted-keys.json'), trusted);
  write(join(out, 'operator-tokens.txt'), [...TOKENS, ENGINE_TOKENS[0]].map((t) => `${t.name} (${t.scopes}${t === ENGINE_TOKENS[0] ? ', engines only' : ''}): ${tokens[t.name]}`).join('\n') + '\n');
  write(join(out, 'README.txt'), readme(randomBytes(4).toString('hex')));
  return result;
}

function readme(tag: string): string {
  return [
    `rstar secrets (set ${tag}), made by \`rstar security init\`. Keep this folder private.`,
    '',
    'Each <principal>/ folder is that service\'s RSTAR_SECRETS_DIR (mount it as a Kubernetes Secret, or point',
    'RSTAR_SECRETS_DIR at it locally); set RSTAR_REQUIRE_AUTH=true so a missing file stops the start.',
    'nats-auth.conf: include it in the nats-server configuration (users and per-subject permissions).',
    'operator-tokens.txt: the HTTP tokens in clear; give each to its holder and delete the file.',
    'See docs/security.md.',
    '',
  ].join('\n');
}
