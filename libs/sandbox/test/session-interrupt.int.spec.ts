import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPool } from '../src';

/**
 * A session cell that runs into its time limit is interrupted as Jupyter and IPython interrupt one
 * (KeyboardInterrupt in the interpreter's main thread) and the session keeps its namespace; it is killed
 * and reset only when the cell does not stop within the grace period, or stops leaving threads or child
 * processes behind. `sessionKept` says which happened.
 */
let pool: SandboxPool;

beforeAll(async () => {
  pool = new SandboxPool({ workers: 2, onWarning: () => undefined });
  await pool.start();
});

afterAll(async () => {
  await pool?.close();
});

describe('session cell past its time limit', () => {
  it('a sympy solve that times out is interrupted; the next cell still has every earlier variable', async () => {
    const s = 'sympy-timeout';
    const first = await pool.execute({
      session: s,
      code: 'import sympy as sp\nx, y, z, a, b, c = sp.symbols("x y z a b c")\nsolution = sp.solve(x**2 - 4, x)\nsolution',
    });
    expect(first).toMatchObject({ status: 'ok', stdout: '[-2, 2]\n', sessionKept: true, sessionReset: false });
    // A symmetric polynomial system with symbolic coefficients: sympy works on it for minutes.
    const slow = await pool.execute({
      session: s,
      code: 'hard = sp.solve([x**3 + y**3 + z**3 - 3*a, x*y*z - b, x + y + z - c], [x, y, z])',
      timeoutMs: 1500,
      outputChars: 100_000,
    });
    expect(slow, slow.stderr).toMatchObject({ status: 'timeout', signal: 'SIGINT', exitCode: null, sessionKept: true, sessionReset: false });
    expect(slow.stderr).toMatch(/Traceback \(most recent call last\):\n[\s\S]*KeyboardInterrupt\n$/);
    expect(slow.stderr).toMatch(/File "<code>", line 1, in <module>\n {4}hard = sp\.solve/);
    const next = await pool.execute({ session: s, code: 'print(solution[0], sp.factor(x**2 - 4))\n"hard" in globals()' });
    expect(next).toMatchObject({ status: 'ok', stdout: '-2 (x - 2)*(x + 2)\nFalse\n', sessionReset: false, sessionKept: true });
    await pool.endSession(s);
  }, 60_000);

  it('a cell that ignores the interrupt is killed after the grace period: the session is reset', async () => {
    const s = 'ignores-sigint';
    await pool.execute({ session: s, code: 'kept = 1' });
    const r = await pool.execute({
      session: s,
      code: 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass',
      timeoutMs: 1000,
    });
    expect(r).toMatchObject({ status: 'timeout', signal: 'SIGKILL', sessionKept: false, sessionReset: true });
    const next = await pool.execute({ session: s, code: 'print(kept)' });
    expect(next).toMatchObject({ status: 'runtime_error', sessionReset: true, sessionKept: true });
    expect(next.stderr).toMatch(/NameError: name 'kept' is not defined/);
    await pool.endSession(s);
  }, 60_000);

  it('a cell that stops but leaves a thread or a child process running is not trusted: reset', async () => {
    for (const [s, code] of [
      ['left-thread', 'import threading, time\ndef spin():\n    while True:\n        time.sleep(0.01)\nthreading.Thread(target=spin, daemon=True).start()\ntime.sleep(60)'],
      ['left-child', 'import subprocess, time\np = subprocess.Popen(["sleep", "60"])\ntime.sleep(60)'],
    ] as const) {
      await pool.execute({ session: s, code: 'kept = 1' });
      const r = await pool.execute({ session: s, code, timeoutMs: 1000 });
      expect(r, s).toMatchObject({ status: 'timeout', sessionKept: false, sessionReset: true });
      expect(r.stderr, s).toMatch(/KeyboardInterrupt/);
      const next = await pool.execute({ session: s, code: '"kept" in globals()' });
      expect(next, s).toMatchObject({ status: 'ok', stdout: 'False\n', sessionReset: true });
      await pool.endSession(s);
    }
  }, 60_000);

  it('a cell that ends on its own keeps the session; stateless calls carry no session fields', async () => {
    const ok = await pool.execute({ session: 'plain', code: 'v = 2\nv ** 10' });
    expect(ok).toMatchObject({ status: 'ok', stdout: '1024\n', sessionKept: true, sessionReset: false });
    const err = await pool.execute({ session: 'plain', code: '1 / 0' });
    expect(err).toMatchObject({ status: 'runtime_error', sessionKept: true });
    expect((await pool.execute({ session: 'plain', code: 'v' })).stdout).toBe('2\n');
    const stateless = await pool.execute({ code: 'print(1)' });
    expect(stateless.sessionKept).toBeUndefined();
    await pool.endSession('plain');
  }, 60_000);
});
