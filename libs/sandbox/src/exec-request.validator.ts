import { InvalidRequestError } from './sandbox.errors';
import type { ExecLimits, ExecRequest } from './sandbox.types';

/** docs/design/protocol.md §3 defaults: 4 s wall clock, 384 MB, 1,000 characters per stream. */
export const DEFAULT_LIMITS: ExecLimits = { timeoutMs: 4_000, memoryMb: 384, outputChars: 1_000 };
/** Server maxima: anything above is clamped down (never run unbounded). */
export const DEFAULT_MAXIMA: ExecLimits & { inputBytes: number; codeBytes: number } = {
  timeoutMs: 60_000,
  memoryMb: 4_096,
  // 1 MiB: what SandboxFusion keeps per stream, so the drop-in routes can keep as much.
  outputChars: 1 << 20,
  inputBytes: 16 << 20,
  codeBytes: 1 << 20,
};
/** Smallest memory limit: below it even a forked interpreter cannot run. */
export const MIN_MEMORY_MB = 32;
const SESSION_RE = /^[A-Za-z0-9_.:@-]{1,200}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text the sandbox can pass on as UTF-8: a lone UTF-16 surrogate (JSON allows `"\ud800"`) has no UTF-8 form. */
function requireUnicode(field: 'code' | 'input', text: string): void {
  const m = LONE_SURROGATE.exec(text);
  if (m)
    throw new InvalidRequestError(
      field,
      `contains a lone UTF-16 surrogate (U+${m[0].charCodeAt(0).toString(16).toUpperCase()}) at index ${m.index}, which has no UTF-8 form; send valid Unicode`,
    );
}

/** A request with every limit resolved. */
export interface ResolvedRequest extends ExecLimits {
  code: string;
  input: string;
  session: string | null;
  /** Echo a final bare expression's repr (docs/design/protocol.md §3); false = plain `python3 prog.py` semantics. */
  echo: boolean;
}

function limitField(
  raw: Record<string, unknown>,
  field: keyof ExecLimits,
  dflt: number,
  max: number,
  min: number,
): number {
  const v = raw[field];
  if (v === undefined || v === null) return Math.min(dflt, max);
  if (typeof v !== 'number' || Number.isNaN(v))
    throw new InvalidRequestError(field, `must be a number, got ${JSON.stringify(v)}; omit it for the default ${dflt}`);
  if (v <= 0) throw new InvalidRequestError(field, `must be > 0, got ${v}; omit it for the default ${dflt}`);
  // Infinity and huge values are clamped to the server maximum: a request never runs unbounded.
  return Math.max(min, Math.min(Math.floor(v), max));
}

/**
 * Validate an untrusted request (any JSON value) and resolve its limits: missing -> default, above
 * the maximum -> clamped, memory below {@link MIN_MEMORY_MB} -> raised to it.
 * @throws InvalidRequestError naming the field (wrong type, not positive, too large code/input, code/input
 *   that is not valid Unicode, bad session id).
 */
export function resolveRequest(
  raw: unknown,
  defaults: ExecLimits,
  maxima: ExecLimits & { inputBytes: number; codeBytes: number },
): ResolvedRequest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new InvalidRequestError('request', 'must be a JSON object like {"code": "print(1)"}');
  const r = raw as Record<string, unknown> & Partial<ExecRequest>;
  if (typeof r.code !== 'string') throw new InvalidRequestError('code', 'is required and must be a string of Python source');
  if (Buffer.byteLength(r.code) > maxima.codeBytes)
    throw new InvalidRequestError('code', `is longer than the maximum of ${maxima.codeBytes} bytes`);
  if (r.input !== undefined && r.input !== null && typeof r.input !== 'string')
    throw new InvalidRequestError('input', 'must be a string (stdin contents) or omitted');
  const input = (r.input as string | undefined | null) ?? '';
  if (Buffer.byteLength(input) > maxima.inputBytes)
    throw new InvalidRequestError('input', `is longer than the maximum of ${maxima.inputBytes} bytes`);
  requireUnicode('code', r.code);
  requireUnicode('input', input);
  let session: string | null = null;
  if (r.session !== undefined && r.session !== null && r.session !== '') {
    if (typeof r.session !== 'string' || !SESSION_RE.test(r.session))
      throw new InvalidRequestError('session', 'must be 1-200 characters of [A-Za-z0-9_.:@-] (e.g. the rollout id) or omitted');
    session = r.session;
  }
  if (r.echo !== undefined && r.echo !== null && typeof r.echo !== 'boolean')
    throw new InvalidRequestError('echo', `must be true or false, got ${JSON.stringify(r.echo)}; omit it for true`);
  return {
    code: r.code,
    input,
    session,
    echo: r.echo ?? true,
    timeoutMs: limitField(r, 'timeoutMs', defaults.timeoutMs, maxima.timeoutMs, 50),
    memoryMb: limitField(r, 'memoryMb', defaults.memoryMb, maxima.memoryMb, MIN_MEMORY_MB),
    outputChars: limitField(r, 'outputChars', defaults.outputChars, maxima.outputChars, 64),
  };
}
