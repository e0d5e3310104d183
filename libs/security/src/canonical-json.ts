import { RstarError } from '@rstar/contracts';

/** A value that has no JSON form (a non-finite number, a bigint, a function). */
export class CanonicalJsonError extends RstarError {
  constructor(message: string, field: string) {
    super('not_canonicalizable', message, field);
  }
}

/**
 * The canonical JSON text of a JSON value (RFC 8785, JSON Canonicalization Scheme, for the values events
 * hold): object members sorted by key (UTF-16 code units, which is JavaScript's default sort), no
 * whitespace, numbers and strings exactly as `JSON.stringify` writes them (ECMAScript's Number::toString
 * and JSON string escaping, which RFC 8785 adopts). Members whose value is `undefined` are left out and
 * `undefined` array items become `null`, as `JSON.stringify` does, so the canonical text of an object
 * equals that of `JSON.parse(JSON.stringify(object))`: a producer's object and the consumer's parse of
 * its payload canonicalize to the same bytes.
 * @throws CanonicalJsonError naming the path of a non-finite number, a bigint or a function.
 */
export function canonicalJson(value: unknown): string {
  return write(value, '');
}

function write(v: unknown, path: string): string {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return JSON.stringify(v);
    case 'number':
      if (!Number.isFinite(v)) throw new CanonicalJsonError(`${path || '(root)'} is ${v}, which JSON cannot carry`, path);
      return JSON.stringify(v);
    case 'object': {
      if (v === null) return 'null';
      if (Array.isArray(v)) {
        let s = '[';
        for (let i = 0; i < v.length; i++) {
          if (i > 0) s += ',';
          const x = v[i];
          s += x === undefined || typeof x === 'function' ? 'null' : write(x, `${path}.${i}`);
        }
        return s + ']';
      }
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return write((v as { toJSON(): unknown }).toJSON(), path);
      const keys = Object.keys(v).sort();
      let s = '{';
      let first = true;
      for (const k of keys) {
        const x = (v as Record<string, unknown>)[k];
        if (x === undefined || typeof x === 'function') continue;
        if (!first) s += ',';
        first = false;
        s += JSON.stringify(k) + ':' + write(x, path ? `${path}.${k}` : k);
      }
      return s + '}';
    }
    case 'undefined':
      return 'null';
    default:
      throw new CanonicalJsonError(`${path || '(root)'} is a ${typeof v}, which JSON cannot carry`, path);
  }
}
