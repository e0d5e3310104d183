import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { WorkersEnvMissingError } from './workers.errors';

/** The nearest `workers/.venv/bin/python` in `dir` or a folder above it. */
function nearest(dir: string): string | null {
  for (let d = dir; ; d = dirname(d)) {
    const p = join(d, 'workers', '.venv', 'bin', 'python');
    if (existsSync(p)) return p;
    if (dirname(d) === d) return null;
  }
}

/**
 * The Python of workers/ (torch, transformers, rstar_trainer): env RSTAR_WORKERS_PYTHON, else the nearest
 * `workers/.venv/bin/python` above this lib (made by `bash workers/setup.sh`), else null.
 */
export function findWorkersPython(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.RSTAR_WORKERS_PYTHON) return env.RSTAR_WORKERS_PYTHON;
  return nearest(resolve(__dirname));
}

/** {@link findWorkersPython}, or @throws WorkersEnvMissingError naming what to run. */
export function workersPython(env: NodeJS.ProcessEnv = process.env): string {
  const p = findWorkersPython(env);
  if (!p) throw new WorkersEnvMissingError(resolve(__dirname, '../../../workers/.venv'));
  return p;
}

/**
 * For tests that need workers/.venv: {@link findWorkersPython}, or null where it is absent (the test skips);
 * under CI (env CI=true) a missing environment @throws WorkersEnvMissingError, so CI never reads a skip
 * as green (infra/local/setup.sh runs `bash workers/setup.sh`).
 */
export function workersPythonForTests(env: NodeJS.ProcessEnv = process.env): string | null {
  const p = findWorkersPython(env);
  if (!p && env.CI === 'true') throw new WorkersEnvMissingError(resolve(__dirname, '../../../workers/.venv'));
  return p;
}
