import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';

/** Repository root (libs/sandbox/src -> ../../..). */
export const REPO_ROOT = resolve(__dirname, '..', '..', '..');
/** The directory holding the zygote's Python package (`rstar_zygote`, run as `python -m rstar_zygote`). */
export const ZYGOTE_ROOT = resolve(__dirname, '..', 'python');
/** The zygote package shipped with this lib. */
export const ZYGOTE_PACKAGE = 'rstar_zygote';

/** Python binary: explicit option, else env RSTAR_PYTHON, else `<repoRoot>/.venv/bin/python`, else `python3`. */
export function resolvePython(explicit?: string): string {
  if (explicit) return explicit;
  if (process.env.RSTAR_PYTHON) return process.env.RSTAR_PYTHON;
  const venv = resolve(REPO_ROOT, '.venv', 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
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
