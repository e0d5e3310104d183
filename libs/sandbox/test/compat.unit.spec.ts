import { describe, expect, it } from 'vitest';
import {
  codeJudgeToExec,
  COMPAT_OUTPUT_CHARS,
  CODE_JUDGE_DEFAULT_TIMEOUT_MS,
  SANDBOX_FUSION_DEFAULT_TIMEOUT_MS,
  execToCodeJudge,
  execToSandboxFusion,
  InvalidRequestError,
  invalidCodeJudgeResult,
  outputMatches,
  parseCodeJudgeBatch,
  parseCodeJudgeSubmission,
  returnCodeOf,
  sandboxFusionToExec,
  type ExecResult,
} from '../src';

const result = (over: Partial<ExecResult>): ExecResult => ({
  status: 'ok', stdout: '', stderr: '', exitCode: 0, signal: null, wallMs: 1500, cpuMs: 250, truncated: false, ...over,
});
const fieldOf = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    if (e instanceof InvalidRequestError) return e.field;
    throw e;
  }
  throw new Error('no error');
};

describe('SandboxFusion /run_code mapping', () => {
  it('maps verl\'s request fields onto an ExecRequest with plain python3 semantics', () => {
    const body = { code: 'print(input())', language: 'python', compile_timeout: 10, run_timeout: 2.5, memory_limit_MB: 1024, stdin: 'hi', files: {}, fetch_files: [] };
    expect(sandboxFusionToExec(body)).toEqual({ code: 'print(input())', input: 'hi', echo: false, outputChars: COMPAT_OUTPUT_CHARS, timeoutMs: 2500, memoryMb: 1024 });
    // -1 (SandboxFusion's "no limit") leaves the pool's memory default; an absent run_timeout is
    // SandboxFusion's own 10 s; null stdin is none.
    expect(sandboxFusionToExec({ code: 'x', language: 'python', memory_limit_MB: -1, stdin: null, extra: 1 })).toEqual({
      code: 'x', input: '', echo: false, outputChars: COMPAT_OUTPUT_CHARS, timeoutMs: SANDBOX_FUSION_DEFAULT_TIMEOUT_MS,
    });
    expect(SANDBOX_FUSION_DEFAULT_TIMEOUT_MS).toBe(10_000);
    expect(COMPAT_OUTPUT_CHARS).toBe(1 << 20);
  });

  it('takes the configured defaults when the request names none', () => {
    const req = sandboxFusionToExec({ code: 'x', language: 'python' }, { timeoutMs: 7000, outputChars: 500 });
    expect(req).toMatchObject({ timeoutMs: 7000, outputChars: 500 });
    expect(sandboxFusionToExec({ code: 'x', language: 'python', run_timeout: 2 }, { timeoutMs: 7000, outputChars: 500 }).timeoutMs).toBe(2000);
  });

  it('rejects what it cannot serve, naming the field', () => {
    expect(fieldOf(() => sandboxFusionToExec({ language: 'python' }))).toBe('code');
    expect(fieldOf(() => sandboxFusionToExec({ code: 'x', language: 'cpp' }))).toBe('language');
    expect(fieldOf(() => sandboxFusionToExec({ code: 'x', language: 'python', run_timeout: -1 }))).toBe('run_timeout');
    expect(fieldOf(() => sandboxFusionToExec({ code: 'x', language: 'python', files: { 'a.txt': 'eA==' } }))).toBe('files');
    expect(fieldOf(() => sandboxFusionToExec({ code: 'x', language: 'python', fetch_files: ['out.txt'] }))).toBe('fetch_files');
    expect(fieldOf(() => sandboxFusionToExec(null))).toBe('request');
  });

  it('maps statuses, times and return codes as SandboxFusion reports them', () => {
    expect(execToSandboxFusion(result({ stdout: '1\n' }))).toEqual({
      httpStatus: 200,
      body: { status: 'Success', message: '', compile_result: null, executor_pod_name: null, files: {}, run_result: { status: 'Finished', execution_time: 1.5, cpu_time: 0.25, return_code: 0, stdout: '1\n', stderr: '' } },
    });
    const failed = execToSandboxFusion(result({ status: 'runtime_error', exitCode: 1, stderr: 'Traceback' }));
    expect(failed.body).toMatchObject({ status: 'Failed', run_result: { status: 'Finished', return_code: 1, stderr: 'Traceback' } });
    expect(execToSandboxFusion(result({ status: 'timeout', exitCode: null, signal: 'SIGKILL' })).body).toMatchObject({ status: 'Failed', run_result: { status: 'TimeLimitExceeded', return_code: null } });
    expect(execToSandboxFusion(result({ status: 'memory_limit', exitCode: null, signal: 'SIGKILL' })).body.run_result?.return_code).toBe(-9);
    expect(execToSandboxFusion(result({ status: 'sandbox_error', stderr: 'broken' })).body).toMatchObject({ status: 'SandboxError', message: 'broken', run_result: null });
    expect(execToSandboxFusion(result({ status: 'overloaded' })).httpStatus).toBe(429);
    expect(execToSandboxFusion(result({ status: 'invalid_request' })).httpStatus).toBe(400);
  });

  it('return codes: exit code, minus the signal number, real-time signals included', () => {
    expect(returnCodeOf({ exitCode: 3, signal: null })).toBe(3);
    expect(returnCodeOf({ exitCode: null, signal: 'SIGSEGV' })).toBe(-11);
    expect(returnCodeOf({ exitCode: null, signal: 'SIGRTMIN+1' })).toBe(-35);
    expect(returnCodeOf({ exitCode: null, signal: null })).toBeNull();
  });
});

describe('code-judge /run mapping', () => {
  it('maps rStar2\'s submission onto an ExecRequest and back', () => {
    const s = parseCodeJudgeSubmission({ type: 'python', solution: 'print(input())', input: '9', expected_output: '9' });
    // No limits in code-judge requests: code-judge's own 10 s, 1 MiB kept per stream.
    expect(codeJudgeToExec(s)).toEqual({ code: 'print(input())', input: '9', echo: false, timeoutMs: CODE_JUDGE_DEFAULT_TIMEOUT_MS, outputChars: COMPAT_OUTPUT_CHARS });
    expect(CODE_JUDGE_DEFAULT_TIMEOUT_MS).toBe(10_000);
    expect(codeJudgeToExec(s, { timeoutMs: 3000, outputChars: 99 })).toMatchObject({ timeoutMs: 3000, outputChars: 99 });
    expect(codeJudgeToExec(parseCodeJudgeSubmission({ type: 'python', solution: 'x', input: null })).input).toBe('');
    const r = execToCodeJudge({ sub_id: 'a', expected_output: '9' }, result({ stdout: '9\n' }));
    expect(r).toEqual({ sub_id: 'a', success: true, run_success: true, cost: 1.5, reason: '', stdout: '9\n', stderr: '' });
    expect(execToCodeJudge({ sub_id: 'a', expected_output: '8' }, result({ stdout: '9\n' }))).toMatchObject({ success: false, run_success: true });
    expect(execToCodeJudge({}, result({})).sub_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reasons: worker_timeout, queue_timeout, internal_error, else empty', () => {
    expect(execToCodeJudge({}, result({ status: 'timeout' }))).toMatchObject({ reason: 'worker_timeout', run_success: false, success: false });
    expect(execToCodeJudge({}, result({ status: 'overloaded' })).reason).toBe('queue_timeout');
    expect(execToCodeJudge({}, result({ status: 'sandbox_error' })).reason).toBe('internal_error');
    expect(execToCodeJudge({}, result({ status: 'runtime_error', exitCode: 1 }))).toMatchObject({ reason: '', run_success: false });
    expect(execToCodeJudge({}, result({ status: 'memory_limit' })).reason).toBe('');
  });

  it('output comparison ignores surrounding whitespace only', () => {
    expect(outputMatches('42\n', '42')).toBe(true);
    expect(outputMatches(' 42 \n\n', '42')).toBe(true);
    expect(outputMatches('4 2', '42')).toBe(false);
  });

  it('rejects malformed submissions naming the field; a batch keeps its good items', () => {
    expect(fieldOf(() => parseCodeJudgeSubmission({ type: 'cpp', solution: 'int main(){}' }))).toBe('type');
    expect(fieldOf(() => parseCodeJudgeSubmission({ type: 'python' }))).toBe('solution');
    const b = parseCodeJudgeBatch({ type: 'batch', sub_id: 'b', submissions: [{ type: 'python', solution: 'print(1)' }, { type: 'python', solution: 5 }] });
    expect(b.sub_id).toBe('b');
    expect(b.items[0]).toMatchObject({ solution: 'print(1)' });
    expect(b.items[1]).toBeInstanceOf(InvalidRequestError);
    expect((b.items[1] as InvalidRequestError).field).toBe('submissions.1.solution');
    expect(invalidCodeJudgeResult({ sub_id: 'x' }, b.items[1] as InvalidRequestError)).toMatchObject({ sub_id: 'x', success: false, run_success: false, reason: '' });
    expect(fieldOf(() => parseCodeJudgeBatch({ type: 'batch' }))).toBe('submissions');
    expect(fieldOf(() => parseCodeJudgeBatch({ type: 'single', submissions: [] }))).toBe('type');
  });
});
