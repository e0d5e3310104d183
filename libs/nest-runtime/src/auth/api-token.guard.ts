import { ForbiddenException, Inject, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { bearerToken, type ApiScope, type SecuritySettings } from '@rstar/security';
import { createLogger } from '@rstar/telemetry';
import { PUBLIC_ROUTE, REQUIRED_SCOPE } from './require-scope.decorator';
import { SECURITY_SETTINGS } from './security.settings.provider';

/** The parts of an HTTP request and response the guard reads and writes. */
interface HttpRequest {
  method?: string;
  url?: string;
  headers: Record<string, string | string[] | undefined>;
}
interface HttpResponse {
  setHeader(name: string, value: string): unknown;
}

/** Cookie a browser may carry the token in (the dashboard's EventSource cannot set headers). */
export const TOKEN_COOKIE = 'rstar_token';

/**
 * The token of a request: `Authorization: Bearer <token>`, else, on a GET or HEAD only, the
 * {@link TOKEN_COOKIE} cookie. A browser attaches cookies to requests any other site makes it send (a
 * form posted to `/run_code`); a state-changing route therefore never takes a cookie (no CSRF), while
 * the dashboard's reads (its EventSource) still can.
 */
export function requestToken(req: HttpRequest): string | null {
  const auth = req.headers.authorization;
  const fromHeader = bearerToken(Array.isArray(auth) ? auth[0] : auth);
  if (fromHeader) return fromHeader;
  const method = (req.method ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'HEAD') return null;
  const cookie = req.headers.cookie;
  const m = new RegExp(`(?:^|;\\s*)${TOKEN_COOKIE}=([^;]+)`).exec(Array.isArray(cookie) ? cookie.join(';') : (cookie ?? ''));
  return m ? decodeURIComponent(m[1]) : null;
}

/**
 * The global guard of every service's HTTP API: a route needs a bearer token with the scope its
 * {@link RequireScope} names (`admin` when it names none), checked in constant time against the
 * service's token set (`RSTAR_API_TOKENS[_FILE]`); 401 (with `WWW-Authenticate: Bearer`) without a valid
 * token, 403 when the token lacks the scope; each refusal is logged (method, path, reason, never the
 * token). Routes marked {@link PublicRoute} (health probes, metrics) stay open. No token configured =
 * authentication off (the dev mode, announced at start by {@link SecurityModule}).
 */
@Injectable()
export class ApiTokenGuard implements CanActivate {
  private readonly log = createLogger('http-auth');

  constructor(
    private readonly reflector: Reflector,
    @Inject(SECURITY_SETTINGS) private readonly security: SecuritySettings,
  ) {}

  canActivate(ctx: ExecutionContext): boolean {
    if (ctx.getType() !== 'http') return true;
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const tokens = this.security.apiTokens;
    if (tokens.size === 0) return true;
    const scope = this.reflector.getAllAndOverride<ApiScope>(REQUIRED_SCOPE, targets) ?? 'admin';
    const http = ctx.switchToHttp();
    const req = http.getRequest<HttpRequest>();
    const token = requestToken(req);
    const r = token === null ? tokens.authorize(null, scope) : tokens.authorizeToken(token, scope);
    if (r.ok) return true;
    this.log.warn(`refused ${req.method} ${(req.url ?? '').split('?')[0]}: ${r.status} ${r.reason}`, { status: r.status, scope });
    if (r.status === 401) {
      http.getResponse<HttpResponse>().setHeader('WWW-Authenticate', `Bearer realm="rstar", scope="${scope}"`);
      throw new UnauthorizedException(`${r.reason}; this route needs a token with scope "${scope}"`);
    }
    throw new ForbiddenException(r.reason);
  }
}
