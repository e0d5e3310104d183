import { constants } from 'node:os';
import { z } from 'zod';
import { InvalidRequestError } from '../sandbox.errors';
import type { ExecRequest, ExecResult } from '../sandbox.types';
import { invalidFromZod } from './compat.errors';

/**
 * SandboxFusion's `POST /run_code` request (RunCodeRequest of its server and of its `sandbox-fusion`
 * client; verl's sandbox tool sends `code`, `language`, `compile_timeout`, `run_timeout`,
 * `memory_limit_MB`, `stdin`, `files: {}`, `fetch_files: []`). Times are seconds; unknown fields are
 * ignored, as pydantic ignores them there.
 */
export const SandboxFusionRunCodeRequest = z.object({
  code: z.string(),
  language: z.string(),
  compile_timeout: z.number().positive().optional(),
  run_timeout: z.number().positive().optional(),
  memory_limit_MB: z.number().int().optional(),
  stdin: z.string().nullable().optional(),
  files: z.record(z.string(), z.string().nullable()).optional(),
  fetch_files: z.array(z.string()).optional(),
});
export type SandboxFusionRunCodeRequest = z.infer<typeof SandboxFusionRunCodeRequest>;

/** SandboxFusion's CommandRunResult (`status` Finished | Error | TimeLimitExceeded; times in seconds). */
export interface SandboxFusionCommandRunResult {
  status: 'Finished' | 'Error' | 'TimeLimitExceeded';
  execution_time: number | null;
  cpu_time: number | null;
  return_code: number | null;
  stdout: string | null;
  stderr: string | null;
}

/** SandboxFusion's RunCodeResponse (`status` Success | Failed | SandboxError). */
export interface SandboxFusionRunCodeResponse {
  status: 'Success' | 'Failed' | 'SandboxError';
  message: string;
  compile_result: SandboxFusionCommandRunResult | null;
  run_result: SandboxFusionCommandRunResult | null;
  executor_pod_name: string | null;
  files: Record<string, string>;
}

/** Languages the route runs: rstar's sandbox is Python only. */
export const SANDBOX_FUSION_LANGUAGES: readonly string[] = ['python', 'python3'];
/**
 * Characters kept per stream on the drop-in routes by default: SandboxFusion reads up to 1 MiB of each
 * stream (its runner's `get_output_non_blocking`) and verl's `check_correctness` compares that whole
 * stdout with the expected output, so a cut at PROTOCOL's 1,000 (or any smaller cap) would judge a right
 * program wrong. Counted in characters, which never keeps less than 1 MiB of bytes would.
 */
export const COMPAT_OUTPUT_CHARS = 1 << 20;
/** SandboxFusion's default `run_timeout` (10 s: its RunCodeRequest's default, and verl's DEFAULT_TIMEOUT). */
export const SANDBOX_FUSION_DEFAULT_TIMEOUT_MS = 10_000;

/**
 * What a drop-in route applies when the request does not say: the time limit of the system it replaces
 * and the characters kept per stream. tool-execution reads them from its settings
 * (`RSTAR_SANDBOX_FUSION_TIMEOUT_MS`, `RSTAR_CODE_JUDGE_TIMEOUT_MS`, `RSTAR_DROP_IN_OUTPUT_CHARS`).
 */
export interface DropInDefaults {
  /** Wall-clock limit in ms for a request that names none. */
  timeoutMs: number;
  /** Characters kept per stream. */
  outputChars: number;
}

/**
 * The ExecRequest for a SandboxFusion `/run_code` body: `run_timeout` s -> `timeoutMs` (absent:
 * `defaults.timeoutMs`, SandboxFusion's 10 s unless configured), `memory_limit_MB` (-1 or absent: the
 * pool's default) -> `memoryMb`, `stdin` -> `input`, plain `python3 prog.py` semantics (`echo: false`),
 * output kept up to `defaults.outputChars` ({@link COMPAT_OUTPUT_CHARS}, SandboxFusion's 1 MiB).
 * `compile_timeout` has nothing to bound for Python and is ignored.
 * @throws InvalidRequestError naming the field: malformed body, a language other than Python, or
 *   `files`/`fetch_files` with entries (not served by this route)
 */
export function sandboxFusionToExec(
  body: unknown,
  defaults: DropInDefaults = { timeoutMs: SANDBOX_FUSION_DEFAULT_TIMEOUT_MS, outputChars: COMPAT_OUTPUT_CHARS },
): ExecRequest {
  const parsed = SandboxFusionRunCodeRequest.safeParse(body);
  if (!parsed.success) throw invalidFromZod(parsed.error, 'send a SandboxFusion RunCodeRequest like {"code": "print(1)", "language": "python"}');
  const r = parsed.data;
  if (!SANDBOX_FUSION_LANGUAGES.includes(r.language))
    throw new InvalidRequestError('language', `"${r.language}" is not served here: rstar's sandbox runs Python only (language "python")`);
  if (r.files && Object.keys(r.files).length)
    throw new InvalidRequestError('files', 'uploading files is not supported by rstar\'s /run_code; send the data on stdin or inside the code');
  if (r.fetch_files?.length)
    throw new InvalidRequestError('fetch_files', 'fetching files is not supported by rstar\'s /run_code; print what you need instead');
  const req: ExecRequest = {
    code: r.code,
    input: r.stdin ?? '',
    echo: false,
    outputChars: defaults.outputChars,
    timeoutMs: r.run_timeout !== undefined ? Math.round(r.run_timeout * 1000) : defaults.timeoutMs,
  };
  if (r.memory_limit_MB !== undefined && r.memory_limit_MB > 0) req.memoryMb = r.memory_limit_MB;
  return req;
}

/**
 * The process's return code as SandboxFusion reports it: the exit code, or minus the signal number for
 * a process killed by a signal (as Python's subprocess does), null when unknown.
 */
export function returnCodeOf(r: Pick<ExecResult, 'exitCode' | 'signal'>): number | null {
  if (r.exitCode !== null) return r.exitCode;
  if (!r.signal) return null;
  const rt = /^SIGRTMIN\+(\d+)$/.exec(r.signal);
  // glibc's SIGRTMIN, what the sandbox's interpreter names real-time signals from.
  const n = rt ? 34 + Number(rt[1]) : (constants.signals as Record<string, number>)[r.signal];
  return n === undefined ? null : -n;
}

/**
 * The SandboxFusion response for an ExecResult and the HTTP status to send it with:
 * ok -> Success/Finished; a program that failed, was killed or hit the memory or output limit ->
 * Failed/Finished with its return code; timeout -> Failed/TimeLimitExceeded; sandbox_error ->
 * SandboxError (the client raises on it); overloaded -> HTTP 429 (the client retries);
 * invalid_request -> HTTP 400 naming the field.
 */
export function execToSandboxFusion(r: ExecResult): { httpStatus: number; body: SandboxFusionRunCodeResponse } {
  const base = { compile_result: null, executor_pod_name: null, files: {} };
  if (r.status === 'sandbox_error' || r.status === 'overloaded' || r.status === 'invalid_request') {
    const httpStatus = r.status === 'overloaded' ? 429 : r.status === 'invalid_request' ? 400 : 200;
    return { httpStatus, body: { status: 'SandboxError', message: r.stderr, run_result: null, ...base } };
  }
  const run: SandboxFusionCommandRunResult = {
    status: r.status === 'timeout' ? 'TimeLimitExceeded' : 'Finished',
    execution_time: r.wallMs / 1000,
    cpu_time: r.cpuMs / 1000,
    return_code: r.status === 'timeout' ? null : returnCodeOf(r),
    stdout: r.stdout,
    stderr: r.stderr,
  };
  const status = r.status === 'ok' ? 'Success' : 'Failed';
  return { httpStatus: 200, body: { status, message: '', run_result: run, ...base } };
}
