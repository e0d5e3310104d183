import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPool, runExecLines, type ExecLine } from '../src';

let pool: SandboxPool;
beforeAll(async () => {
  pool = new SandboxPool({ workers: 2, onWarning: () => undefined });
  await pool.start();
});
afterAll(async () => {
  await pool.close();
});

const linesOf = (text: string) => createInterface({ input: Readable.from([text]), crlfDelay: Infinity });

describe('rstar exec runner', () => {
  it('emits one line per input line in input order; bad lines name the field and the run continues', async () => {
    const input = [
      JSON.stringify({ id: 'slow', code: 'import time\ntime.sleep(0.4)\nprint("slow")' }),
      JSON.stringify({ id: 'fast', code: 'print("fast")' }),
      'not json',
      JSON.stringify({ id: 3 }),
      JSON.stringify({ code: 'print(1)' }),
      JSON.stringify({ id: 5, code: 'print(1)', timeoutMs: 'soon' }),
      JSON.stringify({ id: 6, code: 'print(1)', colour: 'red' }),
      '',
      JSON.stringify({ id: 7, code: 'v = 20', session: 'S' }),
      JSON.stringify({ id: 8, code: 'v + 22', session: 'S' }),
      JSON.stringify({ id: 9, code: 'print(input()[::-1])', input: 'abc' }),
    ].join('\n');
    const out: ExecLine[] = [];
    const { counts, invalid, total } = await runExecLines(linesOf(input), pool, { concurrency: 4 }, (l) => out.push(l));
    expect(out.map((l) => l.id)).toEqual(['slow', 'fast', null, 3, null, 5, 6, 7, 8, 9]);
    expect(out[0]).toMatchObject({ status: 'ok', stdout: 'slow\n' });
    expect(out[1]).toMatchObject({ status: 'ok', stdout: 'fast\n' });
    expect(out[2]!.stderr).toMatch(/line 3: not valid JSON/);
    expect(out[3]!.stderr).toMatch(/code: is required/);
    expect(out[4]!.stderr).toMatch(/id: is required/);
    expect(out[5]!.stderr).toMatch(/timeoutMs/);
    expect(out[6]!.stderr).toMatch(/colour: unknown field/);
    for (const i of [2, 3, 4, 5, 6]) expect(out[i]!.status).toBe('invalid_request');
    expect(out[8]).toMatchObject({ status: 'ok', stdout: '42\n', sessionReset: false });
    expect(out[9]).toMatchObject({ status: 'ok', stdout: 'cba\n' });
    expect(counts).toEqual({ ok: 5, invalid_request: 5 });
    expect({ invalid, total }).toEqual({ invalid: 5, total: 10 });
    for (const i of [2, 3, 4, 5, 6]) expect(out[i]!.stderr).toMatch(/^invalid request: line \d+: /);
    expect(Object.keys(out[0]!).sort()).toEqual(['cpuMs', 'exitCode', 'id', 'signal', 'status', 'stderr', 'stdout', 'truncated', 'wallMs']);
  });

  it('a limit the pool would reject is an invalid line too; program failures are not', async () => {
    const input = [
      JSON.stringify({ id: 'a', code: 'print(1)', memoryMb: 0 }),
      JSON.stringify({ id: 'b', code: 'raise SystemExit(3)' }),
      JSON.stringify({ id: 'c', code: '1/0' }),
    ].join('\n');
    const out: ExecLine[] = [];
    const summary = await runExecLines(linesOf(input), pool, { concurrency: 2 }, (l) => out.push(l));
    expect(out[0]!.stderr).toMatch(/^invalid request: line 1: memoryMb: must be > 0/);
    expect(out.slice(1).map((l) => l.status)).toEqual(['runtime_error', 'runtime_error']);
    expect(summary).toEqual({ counts: { invalid_request: 1, runtime_error: 2 }, total: 3, invalid: 1 });
  });
});
