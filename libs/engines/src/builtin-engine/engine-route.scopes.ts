import type { IncomingMessage } from 'node:http';
import type { ApiScope, ApiTokenSet, AuthorizeResult } from '@rstar/security';

/**
 * The scope each route of the built-in engine requires when it has tokens: the admin routes (weights
 * reload, aborts, cache flush) `admin`, generation `execute`, model and server information `read`;
 * `GET /health`, `GET /health_generate` and `GET /metrics` stay open (probes, Prometheus). A route not
 * listed requires `admin`.
 */
export const ENGINE_ROUTE_SCOPES: Readonly<Record<string, ApiScope | 'public'>> = {
  'GET /health': 'public',
  'GET /health_generate': 'public',
  'GET /metrics': 'public',
  'GET /get_server_info': 'read',
  'GET /server_info': 'read',
  'GET /get_model_info': 'read',
  'GET /v1/models': 'read',
  'POST /generate': 'execute',
  'POST /v1/completions': 'execute',
  'POST /abort_request': 'admin',
  'POST /update_weights_from_disk': 'admin',
  'POST /flush_cache': 'admin',
  'POST /reset_prefix_cache': 'admin',
};

/** Check a request to `route` (`"<METHOD> <path>"`) against `tokens`; null = allowed (or no tokens: open). */
export function authorizeEngineRequest(tokens: ApiTokenSet | undefined, route: string, req: IncomingMessage): Extract<AuthorizeResult, { ok: false }> | null {
  if (!tokens || tokens.size === 0) return null;
  const scope = ENGINE_ROUTE_SCOPES[route] ?? 'admin';
  if (scope === 'public') return null;
  const r = tokens.authorize(req.headers.authorization, scope);
  return r.ok ? null : r;
}
