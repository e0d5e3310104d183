import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freeLocalPort, until } from '@rstar/testing';
import { REPO_ROOT } from '../support/service-process';
import { parseDockerfile } from '../support/dockerfile.rules';

// There is no Docker engine here, so the service image's runtime layout is rebuilt by hand from the
// Dockerfile's own commands: the production-only dependency install (the RUN that installs into /deps, run
// as written with /src pointing at this checkout), the service compiled by build-service.mjs, `dist/main.js`
// linked to its entry, and nothing else — no workspace, no dev dependencies, no TypeScript. tool-execution
// is the service with the most at stake (the sandbox's Python package must be next to the compiled libs).
describe('the service image layout (dist + production dependencies only) runs a service', () => {
  const root = mkdtempSync(join(tmpdir(), 'rstar-image-'));
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it('tool-execution starts from dist/main.js, answers /health/live and runs a program in the sandbox', async () => {
    const dockerfile = readFileSync(join(REPO_ROOT, 'infra/docker/service.Dockerfile'), 'utf8');
    const install = parseDockerfile(dockerfile).find((i) => i.keyword === 'RUN' && i.args.includes('pnpm install --prod'));
    expect(install, 'the Dockerfile installs production dependencies with pnpm install --prod').toBeDefined();
    const deps = join(root, 'deps');
    mkdirSync(deps);
    execFileSync('bash', ['-o', 'pipefail', '-c', install!.args.replaceAll('/src/', `${REPO_ROOT}/`)], { cwd: deps, stdio: 'pipe', env: { ...process.env, CI: '' } });
    // Dev-only packages must not be there: the image would carry them otherwise.
    expect(() => execFileSync('node', ['-e', "require.resolve('typescript')"], { cwd: deps, stdio: 'pipe' })).toThrow();

    execFileSync('node', ['infra/build/build-service.mjs', 'tool-execution'], { cwd: REPO_ROOT, stdio: 'pipe' });
    const app = join(root, 'app');
    mkdirSync(app);
    cpSync(join(REPO_ROOT, 'dist/services/tool-execution'), join(app, 'dist'), { recursive: true });
    symlinkSync('services/tool-execution/src/main.js', join(app, 'dist/main.js'));
    symlinkSync(join(deps, 'node_modules'), join(app, 'node_modules'));

    const port = await freeLocalPort();
    let out = '';
    child = spawn(process.execPath, ['--enable-source-maps', 'dist/main.js'], {
      cwd: app,
      env: { PATH: process.env.PATH, NODE_ENV: 'production', PORT: String(port), HOST: '127.0.0.1', RSTAR_NATS_URL: 'off', RSTAR_SANDBOX_WORKERS: '1', RSTAR_PYTHON: join(REPO_ROOT, '.venv/bin/python') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    const live = await until(async () => {
      if (child!.exitCode !== null) throw new Error(`tool-execution exited (${child!.exitCode}):\n${out.slice(-3000)}`);
      const r = await fetch(`http://127.0.0.1:${port}/health/live`).catch(() => null);
      return r?.ok ? r.json() : undefined;
    }, 'tool-execution from the image layout to answer /health/live', { timeoutMs: 90_000, everyMs: 250 });
    expect(live).toMatchObject({ status: 'ok', service: 'tool-execution' });
    const res = await until(async () => {
      const r = await fetch(`http://127.0.0.1:${port}/v1/execute`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'import sympy\nprint(sympy.factorint(2**10 * 3))' }) });
      return r.status === 200 ? ((await r.json()) as { status: string; stdout: string }) : undefined;
    }, 'a sandbox call from the image layout', { timeoutMs: 90_000, everyMs: 500 });
    expect(res).toMatchObject({ status: 'ok', stdout: '{2: 10, 3: 1}\n' });
  }, 300_000);
});
