import { useEffect, useState } from 'react';

/** A page the hash names (`#/runs/<id>/steps/<n>`); ids are URI-encoded path segments. */
export type Route =
  | { page: 'runs' }
  | { page: 'run'; runId: string; tab: 'overview' | 'steps' | 'rollouts' | 'config' }
  | { page: 'step'; runId: string; step: number }
  | { page: 'rollout'; runId: string; rolloutId: string }
  | { page: 'replay'; runId: string; step: number | null }
  | { page: 'sandbox'; runId: string }
  | { page: 'missing'; hash: string };

/** Parse a location hash into a route (pure). */
export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('?')[0].split('/').filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(hash.split('?')[1] ?? '');
  if (parts.length === 0) return { page: 'runs' };
  if (parts[0] !== 'runs' || !parts[1]) return { page: 'missing', hash };
  const runId = parts[1];
  const tabs = ['overview', 'steps', 'rollouts', 'config'] as const;
  if (parts.length === 2) return { page: 'run', runId, tab: 'overview' };
  if (parts.length === 3 && (tabs as readonly string[]).includes(parts[2])) return { page: 'run', runId, tab: parts[2] as (typeof tabs)[number] };
  if (parts[2] === 'steps' && parts[3] !== undefined && /^\d+$/.test(parts[3])) return { page: 'step', runId, step: Number(parts[3]) };
  if (parts[2] === 'rollouts' && parts[3]) return { page: 'rollout', runId, rolloutId: parts[3] };
  if (parts[2] === 'replay') return { page: 'replay', runId, step: query.get('step') !== null && /^\d+$/.test(query.get('step')!) ? Number(query.get('step')) : null };
  if (parts[2] === 'sandbox') return { page: 'sandbox', runId };
  return { page: 'missing', hash };
}

/** The hash of a route's page. */
export const href = {
  runs: () => '#/',
  run: (runId: string, tab?: string) => `#/runs/${encodeURIComponent(runId)}${tab && tab !== 'overview' ? `/${tab}` : ''}`,
  step: (runId: string, step: number) => `#/runs/${encodeURIComponent(runId)}/steps/${step}`,
  rollout: (runId: string, rolloutId: string) => `#/runs/${encodeURIComponent(runId)}/rollouts/${encodeURIComponent(rolloutId)}`,
  replay: (runId: string, step?: number | null) => `#/runs/${encodeURIComponent(runId)}/replay${step !== undefined && step !== null ? `?step=${step}` : ''}`,
  sandbox: (runId: string) => `#/runs/${encodeURIComponent(runId)}/sandbox`,
};

/** The current route, following `hashchange`. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}
