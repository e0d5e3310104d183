import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src';

/**
 * cgroup v2 (Kubernetes nodes). The test mounts a private cgroup2 hierarchy over /sys/fs/cgroup in a
 * mount namespace of its own (root needed) and runs a pool there (cgroup-v2.probe.ts):
 * - where v2 offers memory+pids (a pure-v2 host), the v2 limits are checked for real: 128 MiB stops a
 *   600 MiB allocation (`memory_limit`), pids.max refuses a fork bomb's 257th task (the bomb sees EAGAIN and stops below its own bound);
 * - where it does not (this project's hosts are cgroup v1 + a hybrid v2 mount that holds only hugetlb:
 *   memory and pids are bound to the v1 hierarchies, and a controller lives in one hierarchy only),
 *   the pool must say so and fall back to rlimits while still running programs.
 */
const ROOT_USER = process.getuid?.() === 0;
const UNSHARE = spawnSync('unshare', ['--version']).status === 0;

describe.skipIf(!ROOT_USER || !UNSHARE)('cgroup v2', () => {
  it('uses v2 limits where v2 offers memory+pids, otherwise falls back loudly', () => {
    const script = [
      'set -e',
      'mount -t tmpfs none /sys/fs/cgroup',
      'mount -t cgroup2 none /sys/fs/cgroup',
      `exec ${resolve(REPO_ROOT, 'node_modules/.bin/tsx')} libs/sandbox/test/cgroup-v2.probe.ts`,
    ].join('\n');
    const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      controllers: string[];
      manager: { version: number | null; reason: string | null };
      health: { cgroup: string; warnings: string[] };
      ok: { status: string; stdout: string };
      mem: string;
      bomb: { status: string; stdout: string };
    };
    console.log(`cgroup2 controllers here: [${out.controllers.join(' ')}]; manager ${JSON.stringify(out.manager)}`);
    expect(out.ok).toMatchObject({ status: 'ok', stdout: '42\n' });
    if (out.controllers.includes('memory') && out.controllers.includes('pids')) {
      expect(out.manager).toEqual({ version: 2, reason: null });
      expect(out.health.cgroup).toBe('v2');
      expect(out.mem).toBe('memory_limit');
      expect(out.bomb.status).toBe('ok');
      expect(Number(out.bomb.stdout)).toBeLessThan(256);
    } else {
      expect(out.manager.version).toBeNull();
      expect(out.manager.reason).toMatch(/cgroup v2 at .* cannot delegate memory\+pids/);
      expect(out.health.cgroup).toBe('none');
      expect(out.health.warnings.join('\n')).toMatch(/cgroups: .*fall back to rlimits/);
      // RLIMIT_AS fallback still stops the allocation; without a pids controller nothing caps the bomb
      // below its own bound (400 children that exit after 5 s).
      expect(out.mem).toBe('memory_limit');
      expect(out.bomb).toMatchObject({ status: 'ok', stdout: '400\n' });
    }
  });
});
