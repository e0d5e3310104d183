import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freeLocalPort, keepOutput, stopGroup } from './process.helpers';
import { until } from './until';

/**
 * The Python environment with `mlflow` and `wandb` that infra/local/setup.sh makes for the tracker tests
 * (`.venv-trackers`, from infra/python/trackers-requirements.txt); RSTAR_TRACKERS_VENV overrides it.
 */
export const TRACKERS_VENV = process.env.RSTAR_TRACKERS_VENV ?? resolve(__dirname, '../../../.venv-trackers');

/** The venv's Python. @throws Error naming the setup command when the venv is missing. */
export function trackersPython(): string {
  const py = join(TRACKERS_VENV, 'bin', 'python');
  if (!existsSync(py)) throw new Error(`no tracker test environment at ${TRACKERS_VENV}: run \`bash infra/local/setup.sh\` (it installs mlflow and wandb there) or set RSTAR_TRACKERS_VENV`);
  return py;
}

/** A real MLflow tracking server on loopback, its store in a temporary folder. */
export interface MlflowServer {
  url: string;
  stop(): Promise<void>;
}

/**
 * Start `mlflow server` (SQLite backend store, artifacts served by the server itself) on a free port and
 * wait for `/health` (its first start takes about a minute on a loaded 2-core machine).
 */
export async function startMlflowServer(): Promise<MlflowServer> {
  const py = trackersPython();
  const port = await freeLocalPort();
  const dir = mkdtempSync(join(tmpdir(), 'rstar-mlflow-'));
  const child: ChildProcess = spawn(
    py,
    ['-m', 'mlflow', 'server', '--host', '127.0.0.1', '--port', String(port), '--workers', '1', '--backend-store-uri', `sqlite:///${join(dir, 'mlflow.db')}`, '--artifacts-destination', join(dir, 'artifacts')],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const out = keepOutput(child, 8000);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopGroup(child, 10_000);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`mlflow server exited (${child.exitCode}): ${out()}`);
        return fetch(`${url}/health`).then((r) => r.ok, () => false);
      },
      `mlflow server on ${url}`,
      { timeoutMs: 240_000, everyMs: 500 },
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, stop };
}
