/**
 * Postgres text and jsonb cannot hold U+0000: an event whose data carries one (a program that printed a
 * NUL byte, a model that sampled one, an exception message) would be refused on every append, and the
 * archiver would retry it forever. The archive stores such a character as U+FFFD instead, the
 * replacement character UTF-8 decoding already uses for bytes it cannot show; the chain hash covers
 * the stored value, so `verifyChain` holds. Producers that can see U+0000 (the sandbox's output, a
 * model tokenizer's text) map it at the source already, so what was observed and what is archived agree.
 */
export const NUL_REPLACEMENT = '\uFFFD';

/**
 * `value` with every U+0000 in its strings (object keys included) replaced by U+FFFD; the same object
 * when there is none. `json` is `JSON.stringify(value)`, checked first so the common case costs one scan.
 */
export function withoutNul<T>(value: T, json: string): { value: T; json: string } {
  if (!json.includes('\\u0000')) return { value, json };
  const clean = scrub(value) as T;
  return { value: clean, json: JSON.stringify(clean) };
}

function scrub(v: unknown): unknown {
  if (typeof v === 'string') return v.includes('\u0000') ? v.replaceAll('\u0000', NUL_REPLACEMENT) : v;
  if (Array.isArray(v)) return v.map(scrub);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replaceAll('\u0000', NUL_REPLACEMENT), scrub(x)]));
  }
  return v;
}
