import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPool } from '../src';
import { waitFor } from './process-probe';

/** Host pids of the processes in this test process's zygote leaves (bwrap, its init, the zygote). */
function zygotePids(): number[] {
  const out: number[] = [];
  const re = new RegExp(`rstar-sbx-${process.pid}-\\d+/w\\d+/zygote$`, 'm');
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (re.test(readFileSync(`/proc/${d}/cgroup`, 'utf8'))) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

let pool: SandboxPool;
beforeAll(async () => {
  pool = new SandboxPool({ workers: 2, onWarning: () => undefined });
  await pool.start();
});
afterAll(async () => {
  await pool.close();
  expect(zygotePids()).toEqual([]);
});

describe('pool lifecycle', () => {
  it('a program cannot signal its zygote or other calls', async () => {
    const r = await pool.execute({ code: 'import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError as e:\n    print("denied", e.errno)\nos.kill(-1, signal.SIGKILL)\nprint("still here")' });
    // kill(-1) reaches only processes of the call's own uid (not the caller itself): the zygote survives.
    expect(r).toMatchObject({ status: 'ok', stdout: 'denied 1\nstill here\n' });
    expect((await pool.execute({ code: 'print(1)' })).stdout).toBe('1\n');
    expect(pool.health().workers.restarts).toBe(0);
  });

  it('a zygote that dies is replaced; callers never see it; its sessions report the reset', async () => {
    await pool.execute({ code: 'z = 1', session: 'lc' });
    const before = zygotePids();
    expect(before.length).toBeGreaterThan(0);
    for (const p of before) {
      try {
        process.kill(p, 'SIGKILL');
      } catch (e) {
        // Killing bwrap (listed first) can take its namespace's init and zygote with it before their turn.
        if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
      }
    }
    const rs = await Promise.all(Array.from({ length: 6 }, (_, i) => pool.execute({ code: `print(${i})` })));
    expect(rs.map((r) => r.stdout)).toEqual(['0\n', '1\n', '2\n', '3\n', '4\n', '5\n']);
    expect(await waitFor(() => pool.health().workers.ready === 2, 60_000)).toBe(true);
    expect(pool.health().workers.restarts).toBeGreaterThanOrEqual(1);
    const s = await pool.execute({ code: 'print("z" in globals())', session: 'lc' });
    expect(s).toMatchObject({ status: 'ok', stdout: 'False\n', sessionReset: true });
  });

  it('endSession drops the interpreter; the next call on that id starts fresh', async () => {
    await pool.execute({ code: 'q = 1', session: 'end-me' });
    await pool.endSession('end-me');
    const r = await pool.execute({ code: 'print("q" in globals())', session: 'end-me' });
    expect(r.stdout).toBe('False\n');
  });

  it('start() sweeps cgroups and temp dirs left by pools of processes that died without close()', async () => {
    const deadPid = Number(execFileSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' }).trim());
    const own = /^\d+:pids:(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1] ?? '/';
    const stale = join('/sys/fs/cgroup/pids', own, `rstar-sbx-${deadPid}-1`);
    const staleTmp = join(tmpdir(), `rstar-sbx-${deadPid}-1`);
    mkdirSync(join(stale, 'w0'), { recursive: true });
    mkdirSync(join(staleTmp, 'w0'), { recursive: true });
    writeFileSync(join(staleTmp, 'w0', 'left.txt'), 'x');
    const p = new SandboxPool({ workers: 1, onWarning: () => undefined });
    await p.start();
    try {
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(staleTmp)).toBe(false);
    } finally {
      await p.close();
    }
  });

  it('a closed pool answers sandbox_error instead of throwing', async () => {
    const p = new SandboxPool({ workers: 1, onWarning: () => undefined });
    expect((await p.execute({ code: 'print(1)' })).status).toBe('sandbox_error');
  });
});
