import type { ExecRequest, ExecResult } from './sandbox.types';
import { poolResult } from './sandbox.pool';
import { DEFAULT_LIMITS, DEFAULT_MAXIMA, resolveRequest } from './exec-request.validator';
import { INVALID_REQUEST_PREFIX } from './sandbox.errors';

/** Anything that runs one request: the in-process pool or a remote service. */
export interface Executor {
  execute(req: ExecRequest): Promise<ExecResult>;
}

/** One output line of `rstar exec`. */
export type ExecLine = { id: string | number | null } & Pick<
  ExecResult,
  'status' | 'stdout' | 'stderr' | 'exitCode' | 'signal' | 'wallMs' | 'cpuMs' | 'truncated'
> & { sessionReset?: boolean; sessionKept?: boolean };

const ALLOWED = new Set(['id', 'code', 'input', 'timeoutMs', 'memoryMb', 'session', 'outputChars', 'echo']);

/** Parse one input line into a request, or an `invalid_request` line naming the bad field. */
export function parseExecLine(line: string, lineNo: number): { id: string | number | null; req?: ExecRequest; error?: string } {
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch (e) {
    return { id: null, error: `line ${lineNo}: not valid JSON (${(e as Error).message}); expected {"id": ..., "code": "..."}` };
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj))
    return { id: null, error: `line ${lineNo}: must be a JSON object like {"id": 1, "code": "print(1)"}` };
  const o = obj as Record<string, unknown>;
  const id = typeof o.id === 'string' || typeof o.id === 'number' ? o.id : null;
  if (id === null) return { id: null, error: `line ${lineNo}: id: is required (a string or a number)` };
  const unknown = Object.keys(o).filter((k) => !ALLOWED.has(k));
  if (unknown.length) return { id, error: `line ${lineNo}: ${unknown[0]}: unknown field (allowed: ${[...ALLOWED].join(', ')})` };
  if (typeof o.code !== 'string') return { id, error: `line ${lineNo}: code: is required and must be a string` };
  const { id: _drop, ...req } = o;
  try {
    // The pool's own check, here too, so the message carries the line number.
    resolveRequest(req, DEFAULT_LIMITS, DEFAULT_MAXIMA);
  } catch (e) {
    return { id, error: `line ${lineNo}: ${(e as Error).message}` };
  }
  return { id, req: req as unknown as ExecRequest };
}

/** What {@link runExecLines} did: result lines by status, and how many input lines were not valid requests. */
export interface ExecRunSummary {
  /** Result lines by status (invalid lines count as `invalid_request`). */
  counts: Record<string, number>;
  /** Result lines written (= non-blank input lines). */
  total: number;
  /** Lines that were not a valid request: unparsable, a field missing or wrong, or rejected by the executor. */
  invalid: number;
}

/**
 * A result for a request that was itself invalid (never ran): `invalid_request`, or the `sandbox_error`
 * with the same stderr prefix that services from before that status answer.
 */
function isInvalidRequest(r: ExecResult): boolean {
  return r.status === 'invalid_request' || (r.status === 'sandbox_error' && r.stderr.startsWith(INVALID_REQUEST_PREFIX));
}

function toLine(id: string | number | null, r: ExecResult): ExecLine {
  const out: ExecLine = {
    id,
    status: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    exitCode: r.exitCode,
    signal: r.signal,
    wallMs: r.wallMs,
    cpuMs: r.cpuMs,
    truncated: r.truncated,
  };
  if (r.sessionReset !== undefined) out.sessionReset = r.sessionReset;
  if (r.sessionKept !== undefined) out.sessionKept = r.sessionKept;
  return out;
}

/**
 * `rstar exec`: run JSON-lines requests with at most `concurrency` in flight and emit one result line
 * per input line **in input order** as soon as it and all before it are done. Blank lines are skipped;
 * bad lines (not JSON, a field missing or wrong) produce an `invalid_request` result naming the field,
 * and the run continues.
 * Requests of one session run in input order (the pool serialises per session).
 * @returns counts by status and the number of invalid lines (`rstar exec` turns it into its exit code).
 */
export async function runExecLines(
  lines: AsyncIterable<string>,
  executor: Executor,
  opts: { concurrency: number },
  emit: (line: ExecLine) => void,
): Promise<ExecRunSummary> {
  const counts: Record<string, number> = {};
  let total = 0;
  let invalid = 0;
  const done = new Map<number, ExecLine>();
  let nextOut = 0;
  let idx = 0;
  let lineNo = 0;
  const inflight = new Set<Promise<void>>();
  const flush = () => {
    while (done.has(nextOut)) {
      const l = done.get(nextOut)!;
      done.delete(nextOut++);
      counts[l.status] = (counts[l.status] ?? 0) + 1;
      total++;
      emit(l);
    }
  };
  // Session requests must reach the pool in input order: chain them per session.
  const sessionTail = new Map<string, Promise<unknown>>();
  for await (const raw of lines) {
    lineNo++;
    if (!raw.trim()) continue;
    const my = idx++;
    const parsed = parseExecLine(raw, lineNo);
    if (parsed.error || !parsed.req) {
      invalid++;
      done.set(my, toLine(parsed.id, poolResult('invalid_request', `${INVALID_REQUEST_PREFIX}${parsed.error ?? 'not a request'}`)));
      flush();
      continue;
    }
    const req = parsed.req;
    const session = typeof req.session === 'string' ? req.session : null;
    const before = session ? (sessionTail.get(session) ?? Promise.resolve()) : Promise.resolve();
    const p = before
      .then(() => executor.execute(req))
      .catch((e: unknown) => poolResult('sandbox_error', `execution failed: ${(e as Error).message}`))
      .then((r) => {
        if (isInvalidRequest(r)) invalid++;
        done.set(my, toLine(parsed.id, r));
        flush();
      });
    if (session) sessionTail.set(session, p);
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    while (inflight.size >= opts.concurrency) await Promise.race(inflight);
  }
  await Promise.all([...inflight]);
  flush();
  return { counts, total, invalid };
}

/**
 * {@link Executor} against a running tool-execution service (`POST <url>/v1/execute`). A 400 becomes
 * an `invalid_request` result with the service's message; a 429 (`overloaded`) is retried after
 * Retry-After, so the client queues instead of failing.
 */
export class HttpExecutor implements Executor {
  constructor(private readonly baseUrl: string) {}

  async execute(req: ExecRequest): Promise<ExecResult> {
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(this.baseUrl.replace(/\/$/, '') + '/v1/execute', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(req),
      });
      const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
      if (res.status === 429 && attempt < 100) {
        const wait = Number(res.headers.get('retry-after') ?? 1) * 1000;
        await new Promise((r) => setTimeout(r, Math.min(wait, 5000) * (0.5 + Math.random())));
        continue;
      }
      if (res.status === 400) return poolResult('invalid_request', `${INVALID_REQUEST_PREFIX}${String(body.message ?? 'rejected')}`);
      if (!res.ok) return poolResult('sandbox_error', `service answered HTTP ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      return body as unknown as ExecResult;
    }
  }
}
