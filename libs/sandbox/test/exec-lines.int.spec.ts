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
    const counts = await runExecLines(linesOf(input), pool, { concurrency: 4 }, (l) => out.push(l));
    expect(out.map((l) => l.id)).toEqual(['slow', 'fast', null, 3, null, 5, 6, 7, 8, 9]);
    expect(out[0]).toMatchObject({ status: 'ok', stdout: 'slow\n' });
    expect(out[1]).toMatchObject({ status: 'ok', stdout: 'fast\n' });
    expect(out[2]!.stderr).toMatch(/line 3: not valid JSON/);
    expect(out[3]!.stderr).toMatch(/code: is required/);
    expect(out[4]!.stderr).toMatch(/id: is required/);
    expect(out[5]!.stderr).toMatch(/timeoutMs/);
    expect(out[6]!.stderr).toMatch(/colour: unknown field/);
    for (const i of [2, 3, 4, 5, 6]) expect(out[i]!.status).toBe('sandbox_error');
    expect(out[8]).toMatchObject({ status: 'ok', stdout: '42\n', sessionReset: false });
    expect(out[9]).toMatchObject({ status: 'ok', stdout: 'cba\n' });
    expect(counts).toEqual({ ok: 5, sandbox_error: 5 });
    expect(Object.keys(out[0]!).sort()).toEqual(['cpuMs', 'exitCode', 'id', 'signal', 'status', 'stderr', 'stdout', 'truncated', 'wallMs']);
  });
});
