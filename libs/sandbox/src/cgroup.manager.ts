import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { join } from 'node:path';

/** One cgroup leaf: its directory per controller (null where that controller is unavailable). */
export interface CgroupLeaf {
  version: 1 | 2;
  memory: string | null;
  pids: string | null;
}

/** The leaves of one worker: where its zygote lives, its stateless call, and one per session slot. */
export interface WorkerCgroups {
  zygote: CgroupLeaf;
  call: CgroupLeaf;
  sessions: CgroupLeaf[];
  /** Directories to remove on teardown, deepest first. */
  dirs: string[];
}

const ROOT = '/sys/fs/cgroup';

function ownPath(controller: string | null): string | null {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  for (const l of lines) {
    const [, ctrls, path] = l.split(':', 3) as [string, string, string];
    if (controller === null ? ctrls === '' && l.startsWith('0::') : ctrls.split(',').includes(controller)) return path;
  }
  return null;
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Creates and removes the cgroups of a pool (docs/design/sandbox.md: v1 `pids`+`memory` are writable by root on
 * these machines; Kubernetes nodes mostly run v2). Layout under the process's own cgroup:
 * `rstar-sbx-<pid>-<n>/w<i>/{zygote,call,s<k>}`. A cgroup OOM kill in a leaf is what tells
 * `memory_limit` apart from any other SIGKILL; `pids.max` stops fork bombs (threads included).
 */
export class CgroupManager {
  readonly version: 1 | 2 | null;
  private readonly bases: { memory: string | null; pids: string | null } = { memory: null, pids: null };
  /** Why cgroups are not used, when they are not. */
  readonly reason: string | null;

  private constructor(version: 1 | 2 | null, bases: { memory: string | null; pids: string | null }, reason: string | null) {
    this.version = version;
    this.bases = bases;
    this.reason = reason;
  }

  /** Detect a writable hierarchy and create this pool's base cgroup; never throws (falls back to none). */
  static create(tag: string): CgroupManager {
    try {
      if (process.platform !== 'linux') return new CgroupManager(null, { memory: null, pids: null }, 'not Linux');
      if (existsSync(join(ROOT, 'cgroup.controllers'))) {
        const own = ownPath(null) ?? '/';
        const parent = join(ROOT, own);
        const base = join(parent, tag);
        mkdirSync(base);
        // v2 only lets a cgroup delegate controllers when it has no processes of its own.
        tryWrite(join(parent, 'cgroup.subtree_control'), '+memory +pids');
        const ok = tryWrite(join(base, 'cgroup.subtree_control'), '+memory +pids');
        if (!ok) {
          rmdirSync(base);
          return new CgroupManager(null, { memory: null, pids: null }, `cgroup v2 at ${parent} cannot delegate memory+pids`);
        }
        return new CgroupManager(2, { memory: base, pids: base }, null);
      }
      const bases: { memory: string | null; pids: string | null } = { memory: null, pids: null };
      for (const c of ['memory', 'pids'] as const) {
        const own = ownPath(c);
        if (own === null || !existsSync(join(ROOT, c))) continue;
        const base = join(ROOT, c, own, tag);
        try {
          mkdirSync(base);
          bases[c] = base;
        } catch {
          /* controller not writable here */
        }
      }
      if (!bases.memory && !bases.pids) return new CgroupManager(null, bases, 'no writable cgroup v1 memory/pids controller');
      if (bases.memory) tryWrite(join(bases.memory, 'memory.use_hierarchy'), '1');
      return new CgroupManager(1, bases, bases.memory && bases.pids ? null : `cgroup v1 ${bases.memory ? 'pids' : 'memory'} not writable`);
    } catch (e) {
      return new CgroupManager(null, { memory: null, pids: null }, `cgroups unavailable: ${(e as Error).message}`);
    }
  }

  /** Create worker `index`'s leaves; null when cgroups are not in use. */
  worker(index: number, sessionSlots: number, pidsMax: number): WorkerCgroups | null {
    if (this.version === null) return null;
    const v = this.version;
    const dirs: string[] = [];
    const mk = (parts: string[]): CgroupLeaf => {
      const leaf: CgroupLeaf = { version: v, memory: null, pids: null };
      for (const c of ['memory', 'pids'] as const) {
        const base = this.bases[c];
        if (!base) continue;
        const d = join(base, ...parts);
        if (v === 2 && c === 'pids' && leaf.memory === d) {
          leaf.pids = d;
          continue;
        }
        if (!existsSync(d)) mkdirSync(d);
        if (!dirs.includes(d)) dirs.push(d);
        leaf[c] = d;
      }
      return leaf;
    };
    const w = `w${index}`;
    const top = mk([w]);
    if (v === 2 && top.memory) tryWrite(join(top.memory, 'cgroup.subtree_control'), '+memory +pids');
    // The whole worker (zygote + sessions + call) is bounded too, as a backstop.
    if (top.pids) tryWrite(join(top.pids, 'pids.max'), String(pidsMax * (sessionSlots + 2) + 64));
    const zygote = mk([w, 'zygote']);
    const call = mk([w, 'call']);
    const sessions = Array.from({ length: sessionSlots }, (_, k) => mk([w, `s${k}`]));
    return { zygote, call, sessions, dirs: dirs.reverse() };
  }

  /** `cgroup.procs` files a process must write its pid into to join `leaf`. */
  static procsFiles(leaf: CgroupLeaf): string[] {
    const files = new Set<string>();
    if (leaf.memory) files.add(join(leaf.memory, 'cgroup.procs'));
    if (leaf.pids) files.add(join(leaf.pids, 'cgroup.procs'));
    return [...files];
  }

  /** Pids still in a leaf (host pid namespace). */
  static pids(leaf: CgroupLeaf): number[] {
    const out = new Set<number>();
    for (const f of CgroupManager.procsFiles(leaf)) {
      try {
        for (const p of readFileSync(f, 'utf8').split('\n')) if (p.trim()) out.add(Number(p));
      } catch {
        /* already removed */
      }
    }
    return [...out];
  }

  /** Kill whatever is left in a worker's leaves and remove their directories (best effort). */
  static removeWorker(w: WorkerCgroups): void {
    for (const leaf of [w.call, ...w.sessions, w.zygote])
      for (const p of CgroupManager.pids(leaf)) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    for (const d of w.dirs) rmdirRetry(d);
  }

  /**
   * Remove what pools of processes that died without `close()` left here: sibling
   * `rstar-sbx-<pid>-<n>` cgroups whose pid is gone (their processes are killed first).
   */
  sweepStale(): number {
    let removed = 0;
    for (const b of new Set([this.bases.memory, this.bases.pids])) {
      if (!b) continue;
      const parent = dirname(b);
      for (const name of readdirSync(parent)) {
        const m = /^rstar-sbx-(\d+)-\d+$/.exec(name);
        if (!m || pidAlive(Number(m[1]))) continue;
        removeTree(join(parent, name));
        removed++;
      }
    }
    return removed;
  }

  /** Remove the pool's base directories. */
  destroy(): void {
    for (const b of new Set([this.bases.memory, this.bases.pids])) if (b) rmdirRetry(b);
  }
}

/** True when a process with this pid exists. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Kill every process of a cgroup subtree and remove its directories, deepest first. */
function removeTree(dir: string): void {
  let subdirs: string[] = [];
  try {
    subdirs = readdirSync(dir).filter((n) => statSync(join(dir, n)).isDirectory());
  } catch {
    return;
  }
  for (const d of subdirs) removeTree(join(dir, d));
  try {
    for (const p of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n'))
      if (p.trim()) {
        try {
          process.kill(Number(p), 'SIGKILL');
        } catch {
          /* gone */
        }
      }
  } catch {
    /* not a cgroup */
  }
  rmdirRetry(dir);
}

function rmdirRetry(d: string): void {
  // A killed process leaves its cgroup a moment after SIGKILL: retry briefly.
  for (let i = 0; i < 200; i++) {
    try {
      rmdirSync(d);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') return;
      const until = Date.now() + 5;
      while (Date.now() < until) {
        /* spin: teardown path only */
      }
    }
  }
}
