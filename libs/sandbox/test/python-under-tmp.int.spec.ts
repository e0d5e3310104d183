import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPool, resolvePython } from '../src';

/**
 * A checkout (and so its .venv) under /tmp or /var/tmp: bwrap binds the Python install back on top of
 * the sandbox's private tmpfs, and the wipe after every call must leave that bind alone. Before, it
 * walked the whole install on every call (~100 ms of CPU per call: every CI clone under /tmp paid it).
 */
const venv = resolve(dirname(resolvePython()), '..');
const haveBwrap = (() => {
  try {
    execFileSync('bwrap', ['--ro-bind', '/', '/', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const usable = haveBwrap && existsSync(join(venv, 'pyvenv.cfg'));
if (!usable) console.warn('python-under-tmp skipped: needs bubblewrap and the sandbox venv (.venv, from infra/local/setup.sh)');

let dir = '';
let pool: SandboxPool;
let copy = '';
beforeAll(async () => {
  if (!usable) return;
  // /tmp itself, whatever TMPDIR says: it is one of the dirs the sandbox wipes after each call.
  dir = mkdtempSync('/tmp/rstar-py-under-tmp-');
  copy = join(dir, 'checkout', '.venv');
  // Hard links: the same install at a path under /tmp in a second or two (same filesystem), else a real copy.
  execFileSync('mkdir', ['-p', dirname(copy)]);
  try {
    execFileSync('cp', ['-al', venv, copy]);
  } catch {
    execFileSync('cp', ['-a', venv, copy]);
  }
  pool = new SandboxPool({ workers: 1, isolation: 'bwrap', python: join(copy, 'bin', 'python'), onWarning: () => undefined });
  await pool.start();
}, 120_000);
afterAll(async () => {
  await pool?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!usable)('a Python install under the temp dirs', () => {
  it('runs calls from it and keeps its bind out of the per-call wipe', async () => {
    const r = await pool.execute({ code: `import sys, sympy\nprint(sys.prefix)\nprint(sympy.sqrt(8))` });
    expect(r).toMatchObject({ status: 'ok', stdout: `${copy}\n2*sqrt(2)\n` });
    const info = (pool as unknown as { workers: { info: { wipeKeep: Record<string, string> } }[] }).workers[0]!.info;
    // The mount point is skipped, the directories leading to it are only descended into.
    expect(info.wipeKeep[copy]).toBe('skip');
    expect(info.wipeKeep[dirname(copy)]).toBe('descend');
    expect(info.wipeKeep[dir]).toBe('descend');
  });

  it('still wipes what a call leaves in /tmp, next to and inside the directories leading to the install', async () => {
    const w = await pool.execute({
      code: `open("/tmp/left.txt", "w").write("x")\nimport os\nos.makedirs("/tmp/d/e", exist_ok=True)\ntry:\n    open("${dirname(copy)}/planted", "w").write("x")\n    print("planted")\nexcept OSError as e:\n    print("refused", e.errno)`,
    });
    expect(w.status).toBe('ok');
    const r = await pool.execute({
      code: `import os\nprint(os.listdir("/tmp"))\nprint(os.listdir("${dirname(copy)}"))\nprint(os.path.exists("${copy}/bin/python"))`,
    });
    expect(r.stdout).toBe(`['${dir.slice('/tmp/'.length)}']\n['.venv']\nTrue\n`);
  });
});
