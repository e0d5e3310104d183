import { RstarError } from '@rstar/contracts';

/** A value that has no JSON form (a non-finite number, a bigint, a symbol). */
export class CanonicalJsonError extends RstarError {
  constructor(message: string, field: string) {
    super('not_canonicalizable', message, field);
  }
}

/**
 * The canonical JSON text of a JSON value (RFC 8785, JSON Canonicalization Scheme, for the values events
 * hold): object members sorted by key (UTF-16 code units, which is JavaScript's default sort), no
 * whitespace, numbers and strings exactly as `JSON.stringify` writes them (ECMAScript's Number::toString
 * and JSON string escaping, which RFC 8785 adopts). Members whose value is `undefined` (or a function)
 * are left out and such array items become `null`, as `JSON.stringify` does, so the canonical text of an
 * object equals that of `JSON.parse(JSON.stringify(object))`: a producer's object and the consumer's parse
 * of its payload canonicalize to the same bytes.
 * Option `nonFinite: 'null'` writes NaN and ±Infinity as `null`, as `JSON.stringify` (and so an archive
 * that stored its text) does; the default refuses them.
 * @throws CanonicalJsonError naming the path of a non-finite number (by default), a bigint or a symbol.
 */
export function canonicalJson(value: unknown, opts: { nonFinite?: 'throw' | 'null' } = {}): string {
  const lenient = opts.nonFinite === 'null';
  try {
    return write(value, lenient);
  } catch (e) {
    if (e !== NOT_JSON) throw e;
    const [path, v] = findBad(value, '', lenient) ?? ['', value];
    throw new CanonicalJsonError(`${path || '(root)'} is ${typeof v === 'number' ? v : `a ${typeof v}`}, which JSON cannot carry`, path);
  }
}

/** Thrown inside the writer (no path bookkeeping on the fast path); the path is found afterwards. */
const NOT_JSON = Symbol('not-json');

function write(v: unknown, lenient: boolean): string {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return JSON.stringify(v);
    case 'number':
      if (Number.isFinite(v)) return JSON.stringify(v);
      if (lenient) return 'null';
      throw NOT_JSON;
    case 'object': {
      if (v === null) return 'null';
      if (Array.isArray(v)) {
        let s = '[';
        for (let i = 0; i < v.length; i++) {
          if (i > 0) s += ',';
          const x = v[i];
          s += x === undefined || typeof x === 'function' ? 'null' : write(x, lenient);
        }
        return s + ']';
      }
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return write((v as { toJSON(): unknown }).toJSON(), lenient);
      const keys = Object.keys(v).sort();
      let s = '{';
      let first = true;
      for (const k of keys) {
        const x = (v as Record<string, unknown>)[k];
        if (x === undefined || typeof x === 'function') continue;
        if (!first) s += ',';
        first = false;
        s += JSON.stringify(k) + ':' + write(x, lenient);
      }
      return s + '}';
    }
    case 'undefined':
    case 'function':
      return 'null';
    default:
      throw NOT_JSON;
  }
}

function findBad(v: unknown, path: string, lenient: boolean): [string, unknown] | null {
  if (typeof v === 'number') return Number.isFinite(v) || lenient ? null : [path, v];
  if (typeof v === 'bigint' || typeof v === 'symbol') return [path, v];
  if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const bad = findBad(x, path ? `${path}.${k}` : k, lenient);
      if (bad) return bad;
    }
  }
  return null;
}
