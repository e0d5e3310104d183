import { readdirSync, readFileSync } from 'node:fs';

/**
 * Host processes whose real uid is one of the sandbox's call uids (61000..61999: a block per worker, one for its stateless calls and one per session slot) and that belong to a
 * pool of THIS test process (cgroup path `rstar-sbx-<our pid>-<n>`): pools of other processes on the
 * shared host (other test files, `rstar train`) use the same uids and must not count. With
 * `exceptSessions`, live session interpreters (in an `s<k>` cgroup leaf, by design alive between
 * calls) are not counted; zombies always are.
 */
export function sandboxProcesses(exceptSessions = false): { pid: number; state: string; cmd: string }[] {
  const ours = `/rstar-sbx-${process.pid}-`;
  const out: { pid: number; state: string; cmd: string }[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const status = readFileSync(`/proc/${d}/status`, 'utf8');
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
      if (uid < 61000 || uid >= 62000) continue;
      const state = /^State:\s+(\S)/m.exec(status)?.[1] ?? '?';
      // A zombie's own cgroup reads as the root: attribute it by its parent (the call's program or the zygote).
      const ppid = /^PPid:\s+(\d+)/m.exec(status)?.[1] ?? d;
      const cgroup = readFileSync(`/proc/${state === 'Z' ? ppid : d}/cgroup`, 'utf8');
      if (!cgroup.includes(ours)) continue;
      if (exceptSessions && state !== 'Z' && /\/w\d+\/s\d+$/m.test(cgroup)) continue;
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' ').slice(0, 120);
      out.push({ pid: Number(d), state, cmd });
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Poll `cond` every 20 ms until it holds or `ms` pass; returns its last value. */
export async function waitFor<T>(cond: () => T, ms = 3000): Promise<T> {
  const until = Date.now() + ms;
  let v = cond();
  while (!v && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 20));
    v = cond();
  }
  return v;
}
