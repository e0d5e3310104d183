import type { RunConfig } from '@rstar/contracts';
import { RunEngineUrlMissingError } from './engine.errors';

/** One entry of a run config's `engines` (as a `RolloutRequested` carries it too). */
export type RunEngine = Pick<RunConfig['engines'][number], 'kind' | 'url' | 'kvCapacityTokens'>;

/**
 * The engine specs (`kind=url[?kv=N]`, for {@link createEngines}) a service uses for a run: the run
 * config's `engines`, each URL the config leaves out (null) taken from the service's own list
 * (`fallback`, its RSTAR_ENGINES) at the same index, with that entry's query parameters (e.g. vLLM's
 * `model`). A config `kvCapacityTokens` becomes `kv` (the scheduler's KV budget for that engine).
 * A built-in policy's run names one URL-less `builtin` entry (validation allows no more): it runs on every
 * engine of the service's list, each with that entry's `kvCapacityTokens` when given.
 * @throws RunEngineUrlMissingError naming `engines.<i>.url` when neither gives a URL.
 */
export function runEngineSpecs(engines: readonly RunEngine[], fallback: readonly string[]): string[] {
  const only = engines.length === 1 ? engines[0]! : null;
  if (only && only.kind === 'builtin' && !only.url) return fallback.map((spec) => withKv(envUrl(spec), kindOf(spec), only.kvCapacityTokens));
  return engines.map((e, i) => {
    if (e.url) return withKv(new URL(e.url), e.kind, e.kvCapacityTokens);
    const env = fallback[i];
    if (!env) throw new RunEngineUrlMissingError(i, fallback.length);
    return withKv(envUrl(env), e.kind, e.kvCapacityTokens);
  });
}

/** The kind of a `kind=url` spec (a bare URL is `sglang`, as in {@link createEngines}). */
function kindOf(spec: string): string {
  const eq = spec.indexOf('=');
  return eq > 0 && !spec.slice(0, eq).includes(':') ? spec.slice(0, eq) : 'sglang';
}

function envUrl(spec: string): URL {
  const eq = spec.indexOf('=');
  return new URL(eq > 0 && !spec.slice(0, eq).includes(':') ? spec.slice(eq + 1) : spec);
}

function withKv(url: URL, kind: string, kv: number | null): string {
  if (kv) url.searchParams.set('kv', String(kv));
  const q = url.searchParams.toString();
  return `${kind}=${url.origin}${url.pathname.replace(/\/+$/, '')}${q ? `?${q}` : ''}`;
}
