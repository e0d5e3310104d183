import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Repository root (libs/sandbox/src -> ../../..; in a build, the service's dist folder). */
export const REPO_ROOT = resolve(__dirname, '..', '..', '..');
/** The directory holding the zygote's Python package (`rstar_zygote`, run as `python -m rstar_zygote`). */
export const ZYGOTE_ROOT = resolve(__dirname, '..', 'python');
/** The zygote package shipped with this lib. */
export const ZYGOTE_PACKAGE = 'rstar_zygote';

/** The nearest `.venv/bin/python` in `dir` or a folder above it (a build under dist/ finds the repo's). */
function nearestVenvPython(dir: string): string | null {
  for (let d = dir; ; d = dirname(d)) {
    const p = join(d, '.venv', 'bin', 'python');
    if (existsSync(p)) return p;
    if (dirname(d) === d) return null;
  }
}

/** Python binary: explicit option, else env RSTAR_PYTHON, else the nearest `.venv/bin/python` above this lib, else `python3`. */
export function resolvePython(explicit?: string): string {
  if (explicit) return explicit;
  if (process.env.RSTAR_PYTHON) return process.env.RSTAR_PYTHON;
  return nearestVenvPython(__dirname) ?? 'python3';
}

/** Where a Python install lives on disk: the directories a sandbox must bind read-only. */
export interface PythonInstall {
  executable: string;
  /** Directories (venv and base install) to expose read-only. */
  roots: string[];
}

/** Ask the interpreter where it lives (≈20 ms, once per pool). @throws Error when it cannot run. */
export function inspectPython(python: string): PythonInstall {
  const out = execFileSync(
    python,
    ['-c', 'import sys,json,os;print(json.dumps([sys.executable,sys.prefix,sys.base_prefix,os.path.realpath(sys.executable)]))'],
    { encoding: 'utf8', timeout: 30_000 },
  );
  const [exe, prefix, base, real] = JSON.parse(out.trim()) as string[];
  const roots = new Set<string>([prefix!, base!]);
  // A venv's python is a link to the base install's binary, which may live outside base_prefix.
  roots.add(resolve(real!, '..', '..'));
  const ok = [...roots].filter((r) => existsSync(r)).map((r) => realpathSync(r));
  // Keep only outermost roots (binding a child after its parent is redundant).
  const outer = ok.filter((r) => !ok.some((o) => o !== r && r.startsWith(o + '/')));
  return { executable: exe!, roots: [...new Set(outer)] };
}
