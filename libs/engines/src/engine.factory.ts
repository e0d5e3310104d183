import { EngineSpecError } from './engine.errors';
import type { EngineAdapter } from './engine.port';
import { DEFAULT_RETRY, type RetryPolicy } from './http.client';
import { SglangAdapter } from './sglang.adapter';
import { VllmAdapter } from './vllm.adapter';

/** Engine kinds: `builtin` speaks SGLang's API, so it shares {@link SglangAdapter}. */
export const ENGINE_KINDS = ['sglang', 'vllm', 'builtin'] as const;

/**
 * Build adapters from specs `kind=url` (e.g. `sglang=http://h:30000`, `vllm=http://h:8000?model=m&kv=200000`;
 * `kv` = the KV-cache budget in tokens the scheduler plans with, for every kind);
 * a bare URL means `sglang`. Ids are `<kind>-<index>` unless the spec has `?id=NAME`; `sglang=...?colocate=1`
 * releases and resumes the engine's memory around each weight update ({@link SglangAdapter}).
 * `apiKey` is the bearer token every adapter sends (the engines' `--api-key`, or a token of the
 * built-in engine's set with the scopes its routes need).
 * @throws EngineSpecError naming the spec and the fix.
 */
export function createEngines(specs: readonly string[], retry: RetryPolicy = DEFAULT_RETRY, opts: { apiKey?: string | null } = {}): EngineAdapter[] {
  return specs.map((spec, i) => {
    const eq = spec.indexOf('=');
    const hasKind = eq > 0 && !spec.slice(0, eq).includes(':');
    const kind = hasKind ? spec.slice(0, eq) : 'sglang';
    const rest = hasKind ? spec.slice(eq + 1) : spec;
    let url: URL;
    try {
      url = new URL(rest);
    } catch {
      throw new EngineSpecError(spec, 'expected kind=http://host:port (kinds: sglang, vllm, builtin)');
    }
    const params = url.searchParams;
    const id = params.get('id') ?? `${kind}-${i}`;
    const base = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
    const kv = params.get('kv');
    if (kv !== null && !(Number(kv) > 0)) throw new EngineSpecError(spec, `kv must be a positive token count, got "${kv}"`);
    switch (kind) {
      case 'sglang':
      case 'builtin': {
        const colocate = params.get('colocate');
        if (colocate !== null && !['0', '1', 'true', 'false'].includes(colocate)) throw new EngineSpecError(spec, `colocate must be 1 or 0, got "${colocate}"`);
        if (kind === 'builtin' && (colocate === '1' || colocate === 'true')) throw new EngineSpecError(spec, 'colocate needs an sglang engine (the built-in engine cannot release its memory)');
        return new SglangAdapter(id, base, retry, kind, opts.apiKey ?? null, { colocate: colocate === '1' || colocate === 'true', kvCapacityTokens: kv ? Number(kv) : undefined });
      }
      case 'vllm': {
        const wait = params.get('reloadWaitMs');
        if (wait !== null && !(Number(wait) >= 0)) throw new EngineSpecError(spec, `reloadWaitMs must be a non-negative number of milliseconds, got "${wait}"`);
        return new VllmAdapter(id, base, { model: params.get('model') ?? undefined, kvCapacityTokens: kv ? Number(kv) : undefined, reloadWaitMs: wait ? Number(wait) : undefined, retry, apiKey: opts.apiKey });
      }
      default:
        throw new EngineSpecError(spec, `unknown kind "${kind}" (kinds: ${ENGINE_KINDS.join(', ')})`);
    }
  });
}
