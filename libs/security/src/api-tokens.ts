import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { RstarError } from '@rstar/contracts';

/** What an HTTP token may do: `read` (runs, events, dashboard), `execute` (run code in the sandbox), `admin` (engine weights, aborts, cache). */
export const API_SCOPES = ['read', 'execute', 'admin'] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/** A token list that does not parse; the message names the line and the fix. */
export class ApiTokenConfigError extends RstarError {
  constructor(message: string, field: string) {
    super('invalid_api_tokens', message, field);
  }
}

interface TokenEntry {
  name: string;
  scopes: ReadonlySet<ApiScope>;
  digest: Buffer;
}

/** The outcome of {@link ApiTokenSet.authorize}: allowed (with the token's name) or refused with 401/403. */
export type AuthorizeResult = { ok: true; name: string } | { ok: false; status: 401 | 403; reason: string };

/** Shortest plain token accepted: 128 bits of base64url. */
const MIN_TOKEN_CHARS = 22;

/**
 * The bearer tokens a service accepts, each with its scopes. Several may be valid at once, so a token is
 * rotated by adding the new one, moving clients over, then removing the old one.
 *
 * Text format (a file, or an environment variable where `;` also separates entries), one token per line,
 * `#` comments: `<scope>[,<scope>...] <token> [name]`, where `<token>` is the token itself (at least 22
 * characters) or `sha256:<64 hex digits>`, its SHA-256, so the secret need not be stored in clear where it
 * is checked. Example: `read,execute rst_Jw3...Q ci` or `admin sha256:9f86...0a08 operator`.
 *
 * Checking is constant-time in the token: the presented token is hashed (SHA-256) and compared with
 * `crypto.timingSafeEqual` against every entry's digest, without stopping at a match.
 */
export class ApiTokenSet {
  private constructor(private readonly entries: readonly TokenEntry[]) {}

  /** Number of tokens configured (0 = authentication off). */
  get size(): number {
    return this.entries.length;
  }

  /** Names of the configured tokens (for the start-up log; never the tokens). */
  get names(): string[] {
    return this.entries.map((e) => e.name);
  }

  /**
   * Parse the token list; `source` names where it came from in errors (e.g. `RSTAR_API_TOKENS_FILE`).
   * @throws ApiTokenConfigError naming the line: an unknown scope, a short token, a bad digest.
   */
  static parse(text: string, source = 'RSTAR_API_TOKENS'): ApiTokenSet {
    const entries: TokenEntry[] = [];
    const lines = text.split(/[\n;]/);
    lines.forEach((raw, i) => {
      const line = raw.replace(/#.*$/, '').trim();
      if (!line) return;
      const [scopeList, secret, name] = line.split(/\s+/);
      const where = `${source} entry ${i + 1}`;
      if (!secret) throw new ApiTokenConfigError(`${where}: expected "<scopes> <token> [name]", e.g. "read,execute <token> ci"`, source);
      const scopes = new Set<ApiScope>();
      for (const s of scopeList.split(',')) {
        if (!(API_SCOPES as readonly string[]).includes(s)) throw new ApiTokenConfigError(`${where}: unknown scope "${s}"; scopes: ${API_SCOPES.join(', ')}`, source);
        scopes.add(s as ApiScope);
      }
      let digest: Buffer;
      if (secret.startsWith('sha256:')) {
        const hex = secret.slice(7);
        if (!/^[0-9a-f]{64}$/i.test(hex)) throw new ApiTokenConfigError(`${where}: "sha256:" must be followed by 64 hex digits (the token's SHA-256)`, source);
        digest = Buffer.from(hex, 'hex');
      } else {
        if (secret.length < MIN_TOKEN_CHARS) {
          throw new ApiTokenConfigError(`${where}: the token has ${secret.length} characters, at least ${MIN_TOKEN_CHARS} are needed; generate one with \`rstar security token\``, source);
        }
        digest = sha256(secret);
      }
      entries.push({ name: name ?? `token-${entries.length + 1}`, scopes, digest });
    });
    return new ApiTokenSet(entries);
  }

  /** An empty set: authentication off. */
  static none(): ApiTokenSet {
    return new ApiTokenSet([]);
  }

  /**
   * Check an `Authorization` header value (`Bearer <token>`) for `scope`: 401 when it is missing,
   * malformed or matches no token; 403 when the token lacks the scope.
   */
  authorize(authorization: string | undefined | null, scope: ApiScope): AuthorizeResult {
    const token = bearerToken(authorization);
    if (token === null) return { ok: false, status: 401, reason: 'missing bearer token (send "Authorization: Bearer <token>")' };
    return this.authorizeToken(token, scope);
  }

  /** Check a bare token for `scope` (see {@link authorize}). */
  authorizeToken(token: string, scope: ApiScope): AuthorizeResult {
    const d = sha256(token);
    let match: TokenEntry | null = null;
    for (const e of this.entries) {
      // Every entry is compared, so the time does not depend on which one (if any) matches.
      if (timingSafeEqual(d, e.digest) && match === null) match = e;
    }
    if (!match) return { ok: false, status: 401, reason: 'unknown bearer token' };
    if (!match.scopes.has(scope)) return { ok: false, status: 403, reason: `token "${match.name}" lacks scope "${scope}" (it has: ${[...match.scopes].join(', ')})` };
    return { ok: true, name: match.name };
  }
}

/** The token of an `Authorization: Bearer <token>` header value, or null. */
export function bearerToken(authorization: string | undefined | null): string | null {
  if (!authorization) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1] : null;
}

/** A new random token: `rst_` + 32 bytes of base64url (256 bits). */
export function generateApiToken(): string {
  return `rst_${randomBytes(32).toString('base64url')}`;
}

/** `sha256:<hex>` of a token, the form to store where tokens are checked. */
export function tokenDigest(token: string): string {
  return `sha256:${sha256(token).toString('hex')}`;
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}
