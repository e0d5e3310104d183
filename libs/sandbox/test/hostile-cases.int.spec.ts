import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, SandboxPool, type ExecResult } from '../src';
import { sandboxProcesses, waitFor } from './process-probe';

/**
 * Every program of fixtures/hostile-cases.jsonl (copied from ../shared/cases) with the expectation
 * written next to it. Limits are shortened (2 s wall) to keep the suite quick; the expectations scale.
 */
interface Case {
  id: string;
  kind: string;
  code: string;
  expect: string;
}
const CASES: Record<string, Case> = Object.fromEntries(
  readFileSync(resolve(__dirname, '../fixtures/hostile-cases.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Case)
    .map((c) => [c.id, c]),
);
const LIMIT = 2000;
/**
 * How far past its limit a timed-out call may end here. Killing a call's whole tree and reaping it
 * takes milliseconds on an idle host but seconds on a loaded shared 2-core one (H10's 33 spinning
 * processes once took 2,760 ms for a 2,000 ms limit). It stays well below the pool's backstop (limit +
 * 10 s, which kills and restarts the zygote: H10 checks no restart happened), so a wall time under it
 * still proves the zygote's own limit ended the call. The tight figure is measured by `pnpm bench
 * sandbox` (`timeout_overrun_ms`), not asserted.
 */
const KILL_MARGIN_MS = 4_000;
/** Server maximum in this suite (clamping target); also the limit of the slowest legitimate cases. */
const MAX = 10_000;
/** Split a multi-call case at its `# === call N ... ===` markers. */
function calls(code: string): string[] {
  return code.split(/^# === call \d+.*===\s*$/m).map((s) => s.trim()).filter(Boolean);
}

let pool: SandboxPool;
const run = (code: string, extra: Record<string, unknown> = {}): Promise<ExecResult> =>
  pool.execute({ code, timeoutMs: LIMIT, ...extra });
const noLeftovers = (exceptSessions = true) => waitFor(() => sandboxProcesses(exceptSessions).length === 0, 3000);

beforeAll(async () => {
  pool = new SandboxPool({ workers: 8, maxima: { timeoutMs: MAX }, onWarning: () => undefined });
  await pool.start();
});

afterAll(async () => {
  // After the whole suite the pool still answers normally...
  const r = await run('print(1)');
  expect(r.status).toBe('ok');
  const tag = readdirSync(tmpdir()).filter((d) => d.startsWith(`rstar-sbx-${process.pid}-`));
  await pool.close();
  // ...and once closed, nothing of it is left: no process, no temp dir.
  expect(await noLeftovers(false)).toBe(true);
  for (const d of tag) expect(existsSync(resolve(tmpdir(), d))).toBe(false);
});

describe('hostile cases', () => {
  it('covers every case of the fixture', () => {
    expect(Object.keys(CASES).length).toBe(30);
  });

  it('H01 cpu loop: timeout from the zygote, whole tree killed, other calls unaffected', async () => {
    const [loop, other] = await Promise.all([run(CASES.H01!.code), run('print(sum(range(10)))')]);
    expect(loop.status).toBe('timeout');
    expect(loop.wallMs).toBeLessThanOrEqual(LIMIT + KILL_MARGIN_MS);
    expect(loop.signal).toBe('SIGKILL');
    expect(other).toMatchObject({ status: 'ok', stdout: '45\n' });
    expect(await noLeftovers()).toBe(true);
  });

  // Calls that end at their time limit and need no process check (which would count another test's
  // programs): they run side by side, each on its own zygote (the pool has one per call here), instead
  // of waiting out 24 s of limits one after another.
  describe.concurrent('time limits, side by side', () => {
    it('H42 abusive limits: rejected naming the field, or clamped to the server maximum', async () => {
      const code = CASES.H42!.code;
      for (const timeoutMs of [0, -1]) {
        const r = await pool.execute({ code, timeoutMs });
        expect(r.status).toBe('invalid_request');
        expect(r.stderr).toMatch(/timeoutMs/);
      }
      for (const memoryMb of [0, -1]) {
        const r = await pool.execute({ code, memoryMb });
        expect(r.status).toBe('invalid_request');
        expect(r.stderr).toMatch(/memoryMb/);
      }
      const clamped = await Promise.all([
        pool.execute({ code, timeoutMs: Infinity }),
        pool.execute({ code, timeoutMs: 1e9 }),
        pool.execute({ code, memoryMb: 1, timeoutMs: 500 }),
      ]);
      for (const r of clamped) expect(r.status).toBe('timeout');
      expect(clamped[0]!.wallMs).toBeLessThanOrEqual(MAX + KILL_MARGIN_MS);
      const bad = await pool.execute({ code: 42 } as never);
      expect(bad.status).toBe('invalid_request');
      expect(bad.stderr).toMatch(/code/);
    });

    it('H02 sleeping: wall-clock timeout although CPU is ~0', async () => {
      const r = await run(CASES.H02!.code);
      expect(r.status).toBe('timeout');
      expect(r.wallMs).toBeGreaterThanOrEqual(LIMIT);
      expect(r.wallMs).toBeLessThanOrEqual(LIMIT + KILL_MARGIN_MS);
      expect(r.cpuMs).toBeLessThan(LIMIT / 4);
      expect(r.stdout).toBe('');
    });

    it('H05 uninterruptible C call: killed at the limit', async () => {
      const r = await run(CASES.H05!.code);
      expect(r.status).toBe('timeout');
      expect(r.wallMs).toBeLessThanOrEqual(LIMIT + KILL_MARGIN_MS);
    });

    it('H05 in a session: the interpreter is killed and the result says state was lost', async () => {
      await run('x = 1', { session: 'h05' });
      const r = await run(CASES.H05!.code, { session: 'h05' });
      expect(r).toMatchObject({ status: 'timeout', sessionReset: true });
    });

    it('H29 session stuck in a loop ignoring interrupts: killed, restarted, next call says state reset', async () => {
      const [c1, c2] = calls(CASES.H29!.code);
      const r1 = await run(c1!, { session: 'h29' });
      expect(r1).toMatchObject({ status: 'timeout', sessionReset: true });
      expect(r1.wallMs).toBeLessThanOrEqual(LIMIT + KILL_MARGIN_MS);
      const r2 = await run(c2!, { session: 'h29' });
      expect(r2).toMatchObject({ status: 'ok', stdout: 'next call runs False\n', sessionReset: true });
      const r3 = await run('print("kept")', { session: 'h29' });
      expect(r3.sessionReset).toBe(false);
    });

    it('H45 output before a timeout is kept', async () => {
      const r = await run(CASES.H45!.code);
      expect(r.status).toBe('timeout');
      expect(r.stdout).toBe('step 1 ok\nstep 2 ok\n');
    });
  });

  it('H04 ignored signals: SIGKILL from outside still ends it', async () => {
    const r = await run(CASES.H04!.code);
    expect(r.status).toBe('timeout');
    expect(r.wallMs).toBeLessThanOrEqual(LIMIT + KILL_MARGIN_MS);
    expect(await noLeftovers()).toBe(true);
  });

  it('H06 new-session grandchild holding the pipe: prompt answer, grandchild killed', async () => {
    const r = await run(CASES.H06!.code);
    expect(r).toMatchObject({ status: 'ok', stdout: 'parent done\n' });
    expect(r.wallMs).toBeLessThan(LIMIT);
    expect(await noLeftovers()).toBe(true);
  });

  // Process-count exhaustion (fork bombs, thread bombs, subprocess floods; README "Process-count
  // exhaustion"): past the call's cgroup pids.max (256 tasks incl. threads and zombies) task creation
  // fails with EAGAIN inside the program, which ends as it chooses (H07: "Finished (message printed) or
  // TimeLimitExceeded"); stderr then ends with a fixed note naming the limit; every task is killed at
  // the end of the call. The wall limit is 10 s so a slow host still reaches 256 forks of a numpy+sympy
  // process (~0.5 s alone) before it.
  const TASK_NOTE = /rstar-sandbox: task limit reached: a call may run at most 256 tasks .*failed with EAGAIN\n$/;

  it('H07 fork bomb: EAGAIN at the per-call task limit, Finished or TimeLimitExceeded, all children killed (repeated)', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await run(CASES.H07!.code, { timeoutMs: MAX });
      expect(['ok', 'timeout'], r.stderr.slice(-300)).toContain(r.status);
      if (r.status === 'ok') {
        expect(r.stdout).toMatch(/^fork refused after \d+ errno 11\n$/);
        expect(Number(/after (\d+)/.exec(r.stdout)![1])).toBeLessThan(256);
        expect(r.stderr).toMatch(TASK_NOTE);
      }
      expect(await noLeftovers()).toBe(true);
    }
  });

  it('task limit: a bomb that does not handle EAGAIN fails, one that retries forever times out; nothing survives', async () => {
    const unhandled = await run('import os\nwhile True:\n    os.fork()', { timeoutMs: MAX });
    expect(['runtime_error', 'timeout']).toContain(unhandled.status);
    if (unhandled.status === 'runtime_error') expect(unhandled.stderr).toMatch(/BlockingIOError[\s\S]*task limit reached/);
    expect(await noLeftovers()).toBe(true);
    const retrying = await run('import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass', { timeoutMs: 3000 });
    expect(retrying.status).toBe('timeout');
    expect(await noLeftovers()).toBe(true);
  });

  it('task limit, threads: a thread bomb sees the refusal and can report it', async () => {
    const code = [
      'import threading, time',
      'ts = []',
      'try:',
      '    while True:',
      '        t = threading.Thread(target=time.sleep, args=(30,), daemon=True)',
      '        t.start()',
      '        ts.append(t)',
      'except RuntimeError as e:',
      '    print("threads refused after", len(ts))',
    ].join('\n');
    const r = await run(code, { timeoutMs: MAX });
    expect(['ok', 'timeout']).toContain(r.status);
    if (r.status === 'ok') {
      expect(r.stdout).toMatch(/^threads refused after \d+\n$/);
      expect(r.stderr).toMatch(TASK_NOTE);
    }
    expect(await noLeftovers()).toBe(true);
  });

  it('task limit, subprocess flood: Popen fails with EAGAIN, all spawned programs killed', async () => {
    const code = ['import subprocess', 'ps = []', 'while True:', '    ps.append(subprocess.Popen(["sleep", "30"]))'].join('\n');
    const r = await run(code, { timeoutMs: MAX });
    expect(['runtime_error', 'timeout']).toContain(r.status);
    if (r.status === 'runtime_error') expect(r.stderr).toMatch(/BlockingIOError[\s\S]*task limit reached/);
    expect(await noLeftovers()).toBe(true);
  });

  it('task limit, session: a bomb cell that returns keeps the interpreter; its children do not outlive the cell', async () => {
    await run('x = 41', { session: 'pids' });
    const r = await run(CASES.H07!.code, { session: 'pids', timeoutMs: MAX });
    expect(['ok', 'timeout']).toContain(r.status);
    if (r.status === 'ok') {
      expect(r.stderr).toMatch(TASK_NOTE);
      // Its killed children are reaped by the interpreter at once, not left as zombies holding task slots.
      expect(await noLeftovers()).toBe(true);
      expect(await run('print(x + 1)', { session: 'pids' })).toMatchObject({ status: 'ok', stdout: '42\n', sessionReset: false });
      expect((await run(CASES.H07!.code, { session: 'pids', timeoutMs: MAX })).stdout).toMatch(/^fork refused after \d+ errno 11\n$/);
    } else {
      expect(await run('print("x" in globals())', { session: 'pids' })).toMatchObject({ status: 'ok', stdout: 'False\n', sessionReset: true });
    }
    expect(await run('print(7)', { session: 'pids' })).toMatchObject({ status: 'ok', stdout: '7\n', sessionReset: false });
  });

  it('below the task limit nothing changes: 100 processes at once are fine, no note', async () => {
    const code = 'import os\nkids = [p for p in (os.fork() for _ in range(100)) if p or os._exit(0)]\nfor k in kids:\n    os.waitpid(k, 0)\nprint(len(kids))';
    const r = await run(code, { timeoutMs: MAX });
    expect(r).toMatchObject({ status: 'ok', stdout: '100\n', stderr: '' });
  });

  it('H08 unreaped children: no zombie survives, repeated', async () => {
    for (let i = 0; i < 5; i++) {
      // 200 forks of a numpy+sympy process take 1-5 s on a loaded shared 2-core host: use the maximum limit.
      const r = await run(CASES.H08!.code, { timeoutMs: MAX });
      expect(r).toMatchObject({ status: 'ok', stdout: 'exited without reaping children\n' });
    }
    expect(await noLeftovers()).toBe(true);
  });

  it('H10 process pool of spinners: timeout from the service, all workers killed', async () => {
    const restarts = pool.health().workers.restarts;
    const r = await run(CASES.H10!.code);
    expect(r.status, r.stderr).toBe('timeout');
    expect(r.signal).toBe('SIGKILL');
    expect(r.wallMs).toBeGreaterThanOrEqual(LIMIT);
    expect(r.wallMs).toBeLessThanOrEqual(LIMIT + KILL_MARGIN_MS);
    expect(pool.health().workers.restarts, 'the zygote ended the call, not the backstop').toBe(restarts);
    expect(await noLeftovers()).toBe(true);
  });

  it('H11 gradual allocation: memory_limit (not runtime/timeout) after ~7-8 lines, which are kept', async () => {
    const r = await run(CASES.H11!.code, { memoryMb: 1024, timeoutMs: MAX, outputChars: 5000 });
    expect(r.status).toBe('memory_limit');
    const lines = r.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(6);
    expect(lines.length).toBeLessThanOrEqual(8);
    expect(lines[0]).toBe('allocated 128 MiB');
    // stderr says why: the sandbox's MemoryError line naming the limit (OOM kill), or Python's own (RLIMIT_AS).
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/^MemoryError/);
    if (r.signal === 'SIGKILL') expect(r.stderr).toContain('at most 1024 MiB (memoryMb)');
  });

  it('H14 BLAS matmul under the default limit: 1 thread, result printed', async () => {
    const r = await run(CASES.H14!.code, { timeoutMs: 3000 });
    expect(r.stdout.split('\n')[0]).toBe('True');
    let pandas = true;
    try {
      execFileSync(pool.health().python.path, ['-c', 'import pandas'], { stdio: 'ignore' });
    } catch {
      pandas = false;
    }
    if (pandas) expect(r).toMatchObject({ status: 'ok', stdout: 'True\nimports ok\n' });
    // pandas is not part of the sandbox's Python set here: the import fails as a program error, nothing worse.
    else expect(r.stderr).toMatch(/ModuleNotFoundError: No module named 'pandas'/);
    const t = await run('import os; print(os.environ["OPENBLAS_NUM_THREADS"], os.environ["OMP_NUM_THREADS"])');
    expect(t.stdout).toBe('1 1\n');
  });

  it('H16 infinite flood: output_limit as soon as the hard cap is hit, output truncated', async () => {
    const r = await run(CASES.H16!.code);
    expect(r.status).toBe('output_limit');
    expect(r.truncated).toBe(true);
    expect(r.wallMs).toBeLessThan(LIMIT);
    expect(r.stdout.length).toBeLessThanOrEqual(1000);
    expect(r.stdout.startsWith('spam spam')).toBe(true);
  });

  it('H17 300 kB line: no pipe deadlock, ok with truncated flag and the tail kept', async () => {
    const r = await run(CASES.H17!.code);
    expect(r).toMatchObject({ status: 'ok', exitCode: 0, truncated: true });
    expect(r.stdout.endsWith('done\n')).toBe(true);
    expect(r.stdout).toMatch(/output truncated: 300006 bytes in total/);
  });

  it('H18 400 kB JSON: truncated=true with head, size and tail ("END")', async () => {
    const r = await run(CASES.H18!.code, { outputChars: 2000 });
    expect(r).toMatchObject({ status: 'ok', truncated: true });
    expect(r.stdout.startsWith('{"values": [0, 1, 2')).toBe(true);
    expect(r.stdout.endsWith('END\n')).toBe(true);
    const full = await run(CASES.H18!.code, { outputChars: 500_000 });
    expect(full.truncated).toBe(false);
    expect(full.stdout.length).toBeGreaterThan(400_000);
  });

  it('output cap: exactly the first and last chars, however often the kept tail wrapped, on both streams, in a session too', async () => {
    // ~590 kB per stream: the zygote's tail ring (64 KiB) wraps ~9 times; pipe reads split lines anywhere.
    const full = Array.from({ length: 100_000 }, (_, i) => `${i}\n`).join('');
    const code = 'import sys\nfor i in range(100000):\n    print(i)\n    print(i, file=sys.stderr)';
    for (const [cap, session] of [[1000, undefined], [97, undefined], [1000, 'cap-session']] as const) {
      // 200,000 unbuffered writes: well under a second idle, several on a loaded host; the limit is not what is tested.
      const r = await run(code, { outputChars: cap, session, timeoutMs: MAX });
      const marker = `\n...[output truncated: ${full.length} bytes in total]...\n`;
      const keep = cap - marker.length;
      const t = Math.floor(keep / 2);
      const expected = full.slice(0, keep - t) + marker + full.slice(full.length - t);
      expect(r, `cap ${cap} ${session ?? 'stateless'}`).toMatchObject({ status: 'ok', truncated: true, stdout: expected, stderr: expected });
    }
    await pool.endSession('cap-session');
  });

  it('H20 unicode: exact UTF-8 text, utf-8 streams', async () => {
    const r = await run(CASES.H20!.code);
    expect(r).toMatchObject({ status: 'ok', stdout: 'x² + y² = 25, π ≈ 3.14159, 解 = {3, 4} ✓\nutf-8 utf-8\n' });
  });

  it('H20b invalid UTF-8 bytes on stdout are replaced, never an error', async () => {
    const r = await run('import sys\nn = sys.stdout.buffer.write(b"ok \\xff\\xfe end\\n")');
    expect(r.status).toBe('ok');
    expect(r.stdout).toBe('ok \uFFFD\uFFFD end\n');
  });

  it('H23 1 MiB of unread stdin, 32 at once: ok, never sandbox_error', async () => {
    const input = 'x'.repeat(1 << 20);
    const rs = await Promise.all(Array.from({ length: 32 }, () => run(CASES.H23!.code, { input })));
    for (const r of rs) expect(r).toMatchObject({ status: 'ok', stdout: 'not reading stdin\n' });
  });

  it('stdin is delivered to the program', async () => {
    const r = await run('a, b = map(int, input().split())\nprint(a + b)', { input: '2 40\n' });
    expect(r).toMatchObject({ status: 'ok', stdout: '42\n' });
  });

  it('H24 deep recursion segfault: runtime_error (SIGSEGV before CPython 3.12), next call fine', async () => {
    const r = await run(CASES.H24!.code, { timeoutMs: MAX });
    const [major, minor] = (pool.health().python.version ?? '0.0').split('.').map(Number);
    if (major! > 3 || (major === 3 && minor! >= 12)) {
      // CPython >= 3.12 bounds C-level recursion (Py_C_RECURSION_LIMIT): the crash the case records becomes an exception.
      expect(r).toMatchObject({ status: 'runtime_error', signal: null, exitCode: 1 });
      expect(r.stderr).toMatch(/RecursionError/);
    } else {
      expect(r).toMatchObject({ status: 'runtime_error', signal: 'SIGSEGV', exitCode: null });
    }
    expect((await run('print(2)')).stdout).toBe('2\n');
  });

  it('H25 native crash: SIGSEGV reported, output before it kept', async () => {
    const r = await run(CASES.H25!.code);
    expect(r).toMatchObject({ status: 'runtime_error', signal: 'SIGSEGV', stdout: 'about to crash\n' });
  });

  it('H26 big integers print (int->str limit raised, reported in health)', async () => {
    const r = await run(CASES.H26!.code);
    expect(r).toMatchObject({ status: 'ok', stdout: '9543\n' });
    expect(pool.health().intMaxStrDigits).toBe(0);
  });

  it('H28 sessions never share state', async () => {
    const [c1, c2, c3] = calls(CASES.H28!.code);
    expect((await run(c1!, { session: 'h28-A' })).status).toBe('ok');
    expect((await run(c2!, { session: 'h28-B' })).stdout).toBe('isolated\n');
    expect((await run(c3!, { session: 'h28-A' })).stdout).toBe('1234\n');
    expect((await run(c2!)).stdout).toBe('isolated\n');
  });

  it('H30 environment: allowlist only, service /proc unreadable', async () => {
    const r = await run(CASES.H30!.code);
    expect(r.status).toBe('ok');
    const keys = JSON.parse(r.stdout.split('\n')[0]!.replace(/'/g, '"')) as string[];
    const allowed = /^(PATH|HOME|PWD|TMPDIR|LANG|LC_ALL|PYTHON\w+|MPL\w+|\w+_NUM_THREADS)$/;
    for (const k of keys) expect(k).toMatch(allowed);
    expect(r.stdout).toMatch(/^1 denied 13$/m);
    expect(r.stdout).not.toMatch(/RSTAR|NATS|DATABASE|postgres/);
  });

  it('H31 planted symlinks: the sandbox rootfs has no host files; cleanup never follows links', async () => {
    const r = await run(CASES.H31!.code);
    expect(r.status).toBe('ok');
    expect(r.stdout).toBe("['result.txt', 'rootfs']\nno hostname\n");
    expect(existsSync('/etc/passwd')).toBe(true);
    // Only the Python install is visible: no service code, no home directories, no host /etc.
    const ls = await run(`import os\nprint(sorted(os.listdir("/")))\nprint(os.listdir(${JSON.stringify(REPO_ROOT)}), os.listdir("/root"), os.path.exists("/etc/passwd"))`);
    expect(ls.stdout).not.toMatch(/'home'|'srv'/);
    expect(ls.stdout.split('\n')[1]).toBe("['.venv'] ['.pyenv'] False");
  });

  it('H32 temp files never survive a call (same and other session)', async () => {
    const first = await run(CASES.H32!.code);
    expect(first.status).toBe('ok');
    for (const opts of [{}, { session: 'h32' }, {}]) {
      const again = await run(CASES.H32!.code, opts);
      expect(again.stdout).not.toMatch(/seen-before/);
    }
  });

  it('H35 network egress: no host interfaces visible, no route', async () => {
    // /sys is not mounted in the sandbox at all, so the listing fails instead of printing ['lo'].
    const r = await run(CASES.H35!.code);
    expect(r.stderr).toMatch(/FileNotFoundError.*\/sys\/class\/net/);
    const rest = CASES.H35!.code.split('\n').filter((l) => !l.includes('/sys/class/net')).join('\n');
    expect(await run(rest)).toMatchObject({ status: 'ok', stdout: 'no route, errno 101\n' });
    const lo = await run('import socket\nprint(socket.if_nameindex())');
    expect(lo.stdout).toBe("[(1, 'lo')]\n");
  });

  it('H36 host loopback services (incl. NATS 4222, Postgres 5432) unreachable', async () => {
    const code = CASES.H36!.code.replace('8194)', '8194, 4222, 5432)');
    const r = await run(code);
    expect(r).toMatchObject({ status: 'ok', stdout: 'reachable loopback ports: []\n' });
  });

  it('H37 python-level probes: guarantees hold whatever they print', async () => {
    const r = await run(CASES.H37!.code);
    expect(['ok', 'runtime_error']).toContain(r.status);
    expect((await run('print(3)')).stdout).toBe('3\n');
  });

  it('H43 burst of 512: all ok with identical output', async () => {
    const rs = await Promise.all(Array.from({ length: 512 }, () => run(CASES.H43!.code, { timeoutMs: 3000 })));
    const statuses = new Set(rs.map((r) => r.status));
    expect([...statuses]).toEqual(['ok']);
    expect(new Set(rs.map((r) => r.stdout)).size).toBe(1);
  });

  it('H44 detached child: finished at once, nothing of the call survives (repeated)', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await run(CASES.H44!.code);
      expect(r).toMatchObject({ status: 'ok', stdout: 'left a detached child behind\n' });
    }
    expect(await noLeftovers()).toBe(true);
  });

  it('errors give type, line, message and the offending line; last expression is echoed', async () => {
    const e = await run('x = 1\ny = [1, 2]\nprint(y[5])');
    expect(e.status).toBe('runtime_error');
    expect(e.stderr).toMatch(/line 3/);
    expect(e.stderr).toMatch(/print\(y\[5\]\)/);
    expect(e.stderr).toMatch(/IndexError: list index out of range/);
    expect(e.stderr).not.toMatch(/zygote/);
    const s = await run('def f(:\n  pass');
    expect(s.status).toBe('runtime_error');
    expect(s.stderr).toMatch(/SyntaxError/);
    const echo = await run('import sympy as sp\nx = sp.Symbol("x")\nsp.solve(x**2 - 4, x)');
    expect(echo).toMatchObject({ status: 'ok', stdout: '[-2, 2]\n' });
    expect((await run('None')).stdout).toBe('');
    expect((await run('import sys; sys.exit(3)')).exitCode).toBe(3);
  });

  it('headless matplotlib works, warm and silent (no font-cache rebuild or config-dir warning on stderr)', async () => {
    const r = await run('import matplotlib.pyplot as plt\nplt.plot([1,2],[3,4])\nplt.savefig("p.png")\nimport os\nprint(os.path.getsize("p.png") > 0)', { timeoutMs: MAX });
    expect(r).toMatchObject({ status: 'ok', stdout: 'True\n', stderr: '' });
  });
});
