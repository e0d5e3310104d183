import { readFileSync } from 'node:fs';
import { SandboxPool } from '../src';
import { CgroupManager } from '../src/cgroup.manager';

/**
 * Run by cgroup-v2.int.spec.ts inside a private mount namespace where /sys/fs/cgroup is a cgroup2
 * mount (what a pure-v2 host, e.g. a Kubernetes node, looks like). Prints one JSON line: which
 * controllers v2 offers, what CgroupManager made of it, and what a pool reports and runs.
 */
async function main(): Promise<void> {
  const controllers = readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8').trim().split(/\s+/).filter(Boolean);
  const cg = CgroupManager.create(`rstar-v2probe-${process.pid}`);
  const manager = { version: cg.version, reason: cg.reason };
  cg.destroy();
  const warnings: string[] = [];
  const pool = new SandboxPool({ workers: 1, onWarning: (m) => warnings.push(m) });
  await pool.start();
  try {
    const h = pool.health();
    const ok = await pool.execute({ code: 'print(6 * 7)' });
    const mem = await pool.execute({ code: 'b = bytearray(600 << 20)\nprint("allocated")', memoryMb: 128 });
    const bomb = await pool.execute({
      code: 'import os, time\nn = 0\ntry:\n    while n < 400:\n        if os.fork() == 0:\n            time.sleep(5)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)',
      timeoutMs: 20_000,
    });
    process.stdout.write(
      JSON.stringify({ controllers, manager, health: { cgroup: h.cgroup, warnings }, ok, mem: mem.status, bomb: { status: bomb.status, stdout: bomb.stdout } }) + '\n',
    );
  } finally {
    await pool.close();
  }
}
main().catch((e) => {
  process.stderr.write(String((e as Error).stack ?? e) + '\n');
  process.exit(1);
});
