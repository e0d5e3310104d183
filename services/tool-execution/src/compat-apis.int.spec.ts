import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from '@rstar/sandbox';
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { startService } from '@rstar/nest-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolExecutionModule } from './tool-execution.module';

/**
 * The drop-in routes over real HTTP, with requests shaped exactly as their callers send them: verl's
 * SandboxFusion tool (`POST /run_code`, and SandboxFusion's own `sandbox-fusion` client from PyPI,
 * unchanged) and rStar2's code-judge client (`POST /run/long-batch`, plus `/run` and `/run/batch`).
 */
let app: INestApplication;
let url: string;

async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

beforeAll(async () => {
  // The service as main.ts builds it, HTTP only (these APIs do not need the bus).
  ({ app, url } = await startService(
    ToolExecutionModule.forRoot({ PORT: '0', HOST: '127.0.0.1', RSTAR_NATS_URL: 'off', RSTAR_SANDBOX_WORKERS: '2', RSTAR_SANDBOX_MAX_TIMEOUT_MS: '5000' }),
    'tool-execution',
  ));
});

afterAll(async () => {
  await app?.close();
});

describe('SandboxFusion POST /run_code', () => {
  it('answers verl\'s request as SandboxFusion does', async () => {
    // verl's call_sandbox_api payload.
    const r = await post('/run_code', {
      compile_timeout: 10, run_timeout: 10, code: 'import sympy as sp\nx = sp.Symbol("x")\nprint(sp.solve(x**2 - 4, x))', stdin: null,
      memory_limit_MB: 1024, language: 'python', files: {}, fetch_files: [],
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'Success', message: '', compile_result: null, files: {}, run_result: { status: 'Finished', return_code: 0, stdout: '[-2, 2]\n', stderr: '' } });
    expect(r.body.run_result.execution_time).toBeGreaterThan(0);
  });

  it('a failing program is Failed/Finished with its return code; a slow one TimeLimitExceeded; stdin is passed', async () => {
    const err = await post('/run_code', { code: 'import sys\nprint("partial")\nsys.exit(3)', language: 'python' });
    expect(err.body).toMatchObject({ status: 'Failed', run_result: { status: 'Finished', return_code: 3, stdout: 'partial\n' } });
    const slow = await post('/run_code', { code: 'import time\ntime.sleep(30)', language: 'python', run_timeout: 1 });
    expect(slow.body).toMatchObject({ status: 'Failed', run_result: { status: 'TimeLimitExceeded', return_code: null } });
    const echo = await post('/run_code', { code: 'print(input()[::-1])', language: 'python', stdin: 'abc\n' });
    expect(echo.body.run_result.stdout).toBe('cba\n');
    // Plain python3 semantics: a final bare expression is not echoed.
    expect((await post('/run_code', { code: 'x = 1\nx + 1', language: 'python' })).body.run_result.stdout).toBe('');
  });

  it('what it cannot serve is a 400 naming the field', async () => {
    const cpp = await post('/run_code', { code: 'int main(){}', language: 'cpp' });
    expect(cpp).toMatchObject({ status: 400, body: { status: 'invalid_request', field: 'language' } });
    const files = await post('/run_code', { code: 'x', language: 'python', files: { 'a.txt': 'eA==' } });
    expect(files).toMatchObject({ status: 400, body: { field: 'files' } });
    expect((await post('/run_code', { language: 'python' })).body.field).toBe('code');
  });

  it('SandboxFusion\'s own Python client (sandbox-fusion on PyPI), unchanged, gets correct answers', async () => {
    const python = resolve(REPO_ROOT, '.venv-dev', 'bin', 'python');
    expect(existsSync(python), `${python} missing: run bash infra/local/setup.sh (infra/python/requirements-dev.txt)`).toBe(true);
    const script = [
      'import json, sys',
      'from sandbox_fusion import run_code, RunCodeRequest, RunStatus',
      'url = sys.argv[1]',
      'ok = run_code(RunCodeRequest(code="print(sum(range(10)))", language="python"), endpoint=url, max_attempts=1)',
      'bad = run_code(RunCodeRequest(code="1/0", language="python"), endpoint=url, max_attempts=1)',
      'tle = run_code(RunCodeRequest(code="while True: pass", language="python", run_timeout=1), endpoint=url, max_attempts=1)',
      'inp = run_code(RunCodeRequest(code="print(int(input()) * 2)", language="python", stdin="21"), endpoint=url, max_attempts=1)',
      'print(json.dumps([ok.status == RunStatus.Success, ok.run_result.stdout, bad.status.value, bad.run_result.return_code,',
      '                  bad.run_result.stderr.splitlines()[-1], tle.run_result.status.value, inp.run_result.stdout]))',
    ].join('\n');
    // Asynchronously: the service answers from this same process.
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
      execFile(python, ['-c', script, url], { encoding: 'utf8', timeout: 120_000 }, (e, stdout, stderr) =>
        done({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([true, '45\n', 'Failed', 1, 'ZeroDivisionError: division by zero', 'TimeLimitExceeded', '42\n']);
  }, 130_000);
});

describe('code-judge POST /run, /run/batch, /run/long-batch', () => {
  it('answers rStar2\'s long-batch request in order, with its fields', async () => {
    // rStar2's call_long_batch payload: {"type": "batch", "submissions": [{type, solution, input}]}.
    const r = await post('/run/long-batch', {
      type: 'batch',
      submissions: [
        { type: 'python', solution: 'print(input())', input: '9' },
        { type: 'python', solution: 'raise ValueError("no")', input: null },
        { type: 'python', solution: 'import time\ntime.sleep(30)', input: null },
        { type: 'python', solution: 'import numpy as np\nprint(np.arange(4).sum())', input: null },
      ],
    });
    expect(r.status).toBe(200);
    expect(typeof r.body.sub_id).toBe('string');
    const [a, b, c, d] = r.body.results;
    expect(a).toMatchObject({ success: true, run_success: true, reason: '', stdout: '9\n', stderr: '' });
    expect(a.cost).toBeGreaterThan(0);
    expect(typeof a.sub_id).toBe('string');
    expect(b).toMatchObject({ success: false, run_success: false, reason: '', stdout: '' });
    expect(b.stderr).toMatch(/ValueError: no\n$/);
    expect(c).toMatchObject({ success: false, run_success: false, reason: 'worker_timeout' });
    expect(d).toMatchObject({ success: true, run_success: true, stdout: '6\n' });
  }, 60_000);

  it('/run compares with expected_output; /run/batch keeps a bad item\'s place', async () => {
    const right = await post('/run', { sub_id: 's1', type: 'python', solution: 'print(6 * 7)', expected_output: '42' });
    expect(right).toMatchObject({ status: 200, body: { sub_id: 's1', success: true, run_success: true, reason: '' } });
    const wrong = await post('/run', { type: 'python', solution: 'print(41)', expected_output: '42' });
    expect(wrong.body).toMatchObject({ success: false, run_success: true });
    const batch = await post('/run/batch', { sub_id: 'b1', type: 'batch', submissions: [{ type: 'python', solution: 'print(1)' }, { type: 'python' }] });
    expect(batch.body.sub_id).toBe('b1');
    expect(batch.body.results.map((x: any) => x.run_success)).toEqual([true, false]);
    expect(batch.body.results[1].stderr).toMatch(/submissions\.1\.solution/);
    const cpp = await post('/run', { type: 'cpp', solution: 'int main(){}' });
    expect(cpp).toMatchObject({ status: 400, body: { status: 'invalid_request', field: 'type' } });
    expect((await post('/run/long-batch', { type: 'batch' })).body.field).toBe('submissions');
  });
});
