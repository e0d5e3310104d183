import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CgroupLeaf } from './cgroup.manager';
import { ZYGOTE_PACKAGE } from './python.resolver';

/** Environment every program sees: nothing from the host (H30), UTF-8 I/O, unbuffered, 1 BLAS thread. */
export function sandboxEnv(workRoot: string): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: workRoot,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PYTHONUNBUFFERED: '1',
    PYTHONIOENCODING: 'utf-8',
    PYTHONUTF8: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONINTMAXSTRDIGITS: '0',
    MPLBACKEND: 'Agg',
    MPLCONFIGDIR: `${workRoot}/.mpl`,
    OPENBLAS_NUM_THREADS: '1',
    OMP_NUM_THREADS: '1',
    MKL_NUM_THREADS: '1',
    NUMEXPR_NUM_THREADS: '1',
  };
}

/** True when `bwrap` can create the namespaces we need on this host (tested once, ~40 ms). */
export function bwrapUsable(): { ok: boolean; reason: string | null } {
  try {
    execFileSync('bwrap', ['--unshare-net', '--unshare-pid', '--ro-bind', '/', '/', '--proc', '/proc', 'true'], {
      timeout: 10_000,
      stdio: 'pipe',
    });
    return { ok: true, reason: null };
  } catch (e) {
    // bwrap's own complaint (e.g. "No permissions to create new namespace") says more than the exit status.
    const stderr = String((e as { stderr?: Buffer }).stderr ?? '').trim().split('\n')[0];
    return { ok: false, reason: `bubblewrap unusable: ${stderr || (e as Error).message.split('\n')[0]}` };
  }
}

/** Inside the sandbox, leaf `name`'s controller dirs are bound at `/cg/<name>/<controller>`. */
function bindLeaf(args: string[], name: string, leaf: CgroupLeaf | null): CgroupLeaf | null {
  if (!leaf) return null;
  const inner: CgroupLeaf = { version: leaf.version, memory: null, pids: null };
  if (leaf.memory) {
    args.push('--bind', leaf.memory, `/cg/${name}/memory`);
    inner.memory = `/cg/${name}/memory`;
  }
  if (leaf.pids) {
    if (leaf.pids === leaf.memory) inner.pids = inner.memory;
    else {
      args.push('--bind', leaf.pids, `/cg/${name}/pids`);
      inner.pids = `/cg/${name}/pids`;
    }
  }
  return inner;
}

/**
 * bubblewrap argv for a zygote (docs/design/sandbox.md: `--unshare-all`-like namespaces, system and Python
 * read-only, private tmpfs, no host env). No cgroup namespace: the zygote moves call children
 * between leaves bound into the sandbox, which needs their real paths.
 * Capabilities kept by the zygote only: the call child drops to an unprivileged uid before user code.
 */
export function bwrapArgs(p: {
  pythonRoots: string[];
  /** Host directory holding the `rstar_zygote` package. */
  zygoteRoot: string;
  env: Record<string, string>;
  call: CgroupLeaf | null;
  sessions: CgroupLeaf[];
}): { args: string[]; inner: { call: CgroupLeaf | null; sessions: CgroupLeaf[] }; zygoteRoot: string } {
  const args = [
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-uts',
    '--hostname',
    'sandbox',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
  ];
  for (const [k, v] of Object.entries(p.env)) args.push('--setenv', k, v);
  for (const d of ['/usr', '/bin', '/lib', '/lib64', '/sbin']) if (existsSync(d)) args.push('--ro-bind', d, d);
  for (const f of ['/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/localtime', '/etc/alternatives'])
    if (existsSync(f)) args.push('--ro-bind', f, f);
  const zygoteRoot = '/opt/rstar';
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/dev/shm');
  args.push('--perms', '0755', '--dir', '/opt', '--perms', '0755', '--dir', '/opt/rstar');
  args.push('--ro-bind', join(p.zygoteRoot, ZYGOTE_PACKAGE), `${zygoteRoot}/${ZYGOTE_PACKAGE}`);
  args.push('--perms', '1777', '--tmpfs', '/tmp', '--perms', '1777', '--tmpfs', '/var/tmp', '--tmpfs', '/run');
  // After the tmpfs mounts, so a Python install under /tmp, /var/tmp or /run (a checkout there) stays visible.
  // bwrap creates missing mount-point parents as 0700 root dirs; the unprivileged call uid must traverse them.
  const bound = ['/usr', '/bin', '/lib', '/lib64', '/sbin'];
  const made = new Set<string>();
  for (const r of p.pythonRoots) {
    if (bound.some((b) => r === b || r.startsWith(b + '/'))) continue;
    const parts = r.split('/').filter(Boolean);
    for (let i = 1; i < parts.length; i++) {
      const d = '/' + parts.slice(0, i).join('/');
      if (!made.has(d)) {
        made.add(d);
        args.push('--perms', '0755', '--dir', d);
      }
    }
    args.push('--ro-bind', r, r);
  }
  const call = bindLeaf(args, 'call', p.call);
  const sessions = p.sessions.map((s, i) => bindLeaf(args, `s${i}`, s)!);
  for (const cap of ['CAP_SETUID', 'CAP_SETGID', 'CAP_KILL', 'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FOWNER'])
    args.push('--cap-add', cap);
  // `python -m rstar_zygote` finds the package in its working directory.
  args.push('--chdir', zygoteRoot);
  return { args, inner: { call, sessions }, zygoteRoot };
}
