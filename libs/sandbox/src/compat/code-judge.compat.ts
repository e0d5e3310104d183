import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { InvalidRequestError } from '../sandbox.errors';
import type { ExecRequest, ExecResult } from '../sandbox.types';
import { invalidFromZod } from './compat.errors';
import { COMPAT_OUTPUT_CHARS, type DropInDefaults } from './sandbox-fusion.compat';

/** code-judge's own time limit for a submission (rStar2's client sends none, so this is what it gets). */
export const CODE_JUDGE_DEFAULT_TIMEOUT_MS = 10_000;

/**
 * code-judge's Submission (`POST /run`, and each item of `/run/batch`, `/run/long-batch`) as rStar2's
 * tool client sends it: `type` and `solution` (the whole program), `input` (stdin, may be null),
 * optional `sub_id` and `expected_output`. Unknown fields are ignored, as pydantic ignores them there.
 */
export const CodeJudgeSubmission = z.object({
  sub_id: z.string().nullable().optional(),
  type: z.string(),
  solution: z.string(),
  input: z.string().nullable().optional(),
  expected_output: z.string().nullable().optional(),
});
export type CodeJudgeSubmission = z.infer<typeof CodeJudgeSubmission>;

/** Most submissions one batch may carry (past the pool's queue they come back as `queue_timeout`). */
export const CODE_JUDGE_MAX_BATCH = 4096;

/** code-judge's BatchSubmission (`type` is always "batch"). */
export const CodeJudgeBatch = z.object({
  sub_id: z.string().nullable().optional(),
  type: z.literal('batch').optional(),
  submissions: z.array(z.unknown()).max(CODE_JUDGE_MAX_BATCH),
});

/** code-judge's SubmissionResult; `cost` in seconds. */
export interface CodeJudgeResult {
  sub_id: string;
  success: boolean;
  run_success: boolean;
  cost: number;
  reason: '' | 'worker_timeout' | 'queue_timeout' | 'internal_error';
  stdout: string;
  stderr: string;
}

/**
 * Validate one submission. @throws InvalidRequestError naming the field (`prefix` + field): malformed,
 * or a `type` other than "python" (rstar's sandbox runs Python only).
 */
export function parseCodeJudgeSubmission(body: unknown, prefix = ''): CodeJudgeSubmission {
  const parsed = CodeJudgeSubmission.safeParse(body);
  if (!parsed.success) {
    const e = invalidFromZod(parsed.error, 'send a code-judge Submission like {"type": "python", "solution": "print(1)"}');
    throw new InvalidRequestError(prefix + e.field, e.message.slice(e.field.length + 2));
  }
  if (parsed.data.type !== 'python')
    throw new InvalidRequestError(`${prefix}type`, `"${parsed.data.type}" is not served here: rstar's sandbox runs Python only (type "python")`);
  return parsed.data;
}

/**
 * The ExecRequest for a submission: `solution` runs as `python3 prog.py` would (`echo: false`) with
 * `input` on stdin. code-judge requests carry no limits: the time limit is `defaults.timeoutMs`
 * (code-judge's own 10 s unless configured), output is kept up to `defaults.outputChars`, memory is the
 * pool's default.
 */
export function codeJudgeToExec(
  s: CodeJudgeSubmission,
  defaults: DropInDefaults = { timeoutMs: CODE_JUDGE_DEFAULT_TIMEOUT_MS, outputChars: COMPAT_OUTPUT_CHARS },
): ExecRequest {
  return { code: s.solution, input: s.input ?? '', echo: false, timeoutMs: defaults.timeoutMs, outputChars: defaults.outputChars };
}

/**
 * Whether `stdout` is the expected output: equal once leading and trailing whitespace is removed on
 * both sides (a trailing newline never makes an answer wrong).
 */
export function outputMatches(stdout: string, expected: string): boolean {
  return stdout.trim() === expected.trim();
}

/**
 * The SubmissionResult for an ExecResult: `run_success` = exit 0; `success` = run_success and, when
 * `expected_output` was given, the output matches it; `reason` = `worker_timeout` for a timeout,
 * `queue_timeout` when the pool was overloaded (rStar2's client sends those again), `internal_error` for
 * a sandbox error, else '' (a plain success or failure, memory and output limits included: stderr says
 * which); `cost` = wall time in seconds.
 */
export function execToCodeJudge(s: Pick<CodeJudgeSubmission, 'sub_id' | 'expected_output'>, r: ExecResult): CodeJudgeResult {
  const runSuccess = r.status === 'ok';
  const reason: CodeJudgeResult['reason'] =
    r.status === 'timeout' ? 'worker_timeout' : r.status === 'overloaded' ? 'queue_timeout' : r.status === 'sandbox_error' ? 'internal_error' : '';
  const expected = s.expected_output;
  return {
    sub_id: s.sub_id ?? randomUUID(),
    success: runSuccess && (expected === null || expected === undefined || outputMatches(r.stdout, expected)),
    run_success: runSuccess,
    cost: r.wallMs / 1000,
    reason,
    stdout: r.stdout,
    stderr: r.stderr,
  };
}

/**
 * A batch's submissions validated one by one: a malformed item does not sink the batch, it gets its
 * own failed result (`run_success: false`, stderr naming the field), as the others run.
 * @throws InvalidRequestError when the body itself is not a BatchSubmission
 */
export function parseCodeJudgeBatch(body: unknown): { sub_id: string; items: (CodeJudgeSubmission | InvalidRequestError)[] } {
  const parsed = CodeJudgeBatch.safeParse(body);
  if (!parsed.success)
    throw invalidFromZod(parsed.error, `send a code-judge BatchSubmission like {"type": "batch", "submissions": [...]} (at most ${CODE_JUDGE_MAX_BATCH})`);
  const items = parsed.data.submissions.map((s, i) => {
    try {
      return parseCodeJudgeSubmission(s, `submissions.${i}.`);
    } catch (e) {
      if (e instanceof InvalidRequestError) return e;
      throw e;
    }
  });
  return { sub_id: parsed.data.sub_id ?? randomUUID(), items };
}

/** The failed result of a batch item that was not a valid submission. */
export function invalidCodeJudgeResult(item: unknown, e: InvalidRequestError): CodeJudgeResult {
  const subId = (item as { sub_id?: unknown } | null)?.sub_id;
  return {
    sub_id: typeof subId === 'string' ? subId : randomUUID(),
    success: false,
    run_success: false,
    cost: 0,
    reason: '',
    stdout: '',
    stderr: `invalid request: ${e.message}`,
  };
}
