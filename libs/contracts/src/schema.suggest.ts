import type { z } from 'zod';

/** What a zod schema's internals expose (zod 4): the definition's type and its inner schemas. */
type Def = { type: string; shape?: Record<string, z.ZodType>; element?: z.ZodType; innerType?: z.ZodType; in?: z.ZodType; options?: z.ZodType[] };
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/**
 * The member names an object schema at `path` (object keys, array indices) accepts, looking through
 * optional, default, prefault, nullable and pipe wrappers; empty when the path does not lead to one object.
 */
export function objectKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let s: z.ZodType | undefined = schema;
  let i = 0;
  while (s) {
    const d = defOf(s);
    if (d.innerType) s = d.innerType;
    else if (d.type === 'pipe' && d.in) s = d.in;
    else if (i === path.length) return d.type === 'object' && d.shape ? Object.keys(d.shape) : [];
    else if (d.type === 'object' && d.shape) s = d.shape[String(path[i++])];
    else if (d.type === 'array' && d.element) {
      s = d.element;
      i++;
    } else return [];
  }
  return [];
}

/** Edit distance (insertions, deletions, substitutions, adjacent swaps), case-insensitive. */
function distance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * The accepted name closest to `key` when it is a likely misspelling (at most a third of its letters
 * off, at least one), else null: `groupSiz` -> `groupSize`, `maxResponseToken` -> `maxResponseTokens`.
 */
export function closestKey(key: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestD = Infinity;
  for (const k of known) {
    const dd = distance(key, k);
    if (dd < bestD) [best, bestD] = [k, dd];
  }
  return best !== null && bestD <= Math.max(1, Math.floor(key.length / 3)) ? best : null;
}
