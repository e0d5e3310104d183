import { chmodSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '@rstar/testing';
import { generateSecrets } from '@rstar/security';
import { freeLocalPort } from '@rstar/testing';
import { REPO_ROOT, ServiceProcess } from '../support/service-process';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';

// The venv's own path (a checkout may link .venv elsewhere; bubblewrap mounts only the real one).
const PYTHON = join(realpathSync(join(REPO_ROOT, '.venv')), 'bin/python');


async function ready(port: number): Promise<{ status: number; body: any }> {
  const r = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(5_000) });
  return { status: r.status, body: await r.json() };
}

/** The service's `{"event":"listening",...}` line. */
function listeningLine(output: string): { address: string; url: string } {
  const line = output.split('\n').find((l) => l.includes('"event":"listening"'));
  if (!line) throw new Error(`no listening line in:\n${output}`);
  return JSON.parse(line);
}

/**
 * Defaults fail closed (issue 27, build 4), on real service processes: the HTTP API listens on loopback
 * unless HOST says otherwise, a reachable HOST without API tokens refuses to start naming the variable,
 * and tool-execution without a usable bubblewrap runs nothing and is not ready, saying why.
 */
describe('fail closed: listen address and sandbox isolation', () => {
  const stops: Array<() => Promise<void>> = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }, 60_000);

  /** A folder with a bwrap first on PATH that fails the way it does where unprivileged user namespaces are off. */
  let noBwrap: string | undefined;
  const noBwrapDir = (): string => {
    if (noBwrap) return noBwrap;
    const bin = mkdtempSync(join(tmpdir(), 'rstar-no-bwrap-'));
    dirs.push(bin);
    writeFileSync(join(bin, 'bwrap'), '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n');
    chmodSync(join(bin, 'bwrap'), 0o755);
    return (noBwrap = bin);
  };
  /**
   * One tool-execution two tests share (started by whichever runs first, stopped after the file): no API
   * tokens, HOST empty (the default address), sandbox isolation `none` said explicitly, with the failing bwrap
   * first on PATH (which `none` never runs). The default-address test reads its listening line; the bubblewrap
   * test, its readiness.
   */
  let plainSvc: Promise<ServiceProcess> | undefined;
  const plain = (): Promise<ServiceProcess> =>
    (plainSvc ??= (async () => {
      const env = { RSTAR_NATS_URL: 'off', RSTAR_SANDBOX_WORKERS: '1', RSTAR_PYTHON: PYTHON, HOST: '', PATH: `${noBwrapDir()}:${process.env.PATH}`, RSTAR_SANDBOX_ISOLATION: 'none' };
      const svc = new ServiceProcess({ name: 'tool-execution', entry: 'services/tool-execution/src/main.ts', port: await freeLocalPort(), env });
      stops.push(() => svc.stop());
      await svc.start();
      return svc;
    })());

  it('HOST=0.0.0.0 without tokens refuses to start naming HOST and the fix; RSTAR_ALLOW_INSECURE=true starts it, logged loudly, and the log says the address really bound', async () => {
    const base = { RSTAR_NATS_URL: 'off', RSTAR_SANDBOX_WORKERS: '1', RSTAR_PYTHON: PYTHON, RSTAR_API_TOKENS: '', RSTAR_SECRETS_DIR: '' };
    const refused = new ServiceProcess({ name: 'tool-execution', entry: 'services/tool-execution/src/main.ts', port: await freeLocalPort(), env: { ...base, HOST: '0.0.0.0' } });
    // The two processes are independent (own ports): the insecure one starts while the refused one boots and exits.
    const port = await freeLocalPort();
    const open = new ServiceProcess({ name: 'tool-execution', entry: 'services/tool-execution/src/main.ts', port, waitFor: 'live', env: { ...base, HOST: '0.0.0.0', RSTAR_ALLOW_INSECURE: 'true' } });
    stops.push(() => open.stop());
    const opening = open.start();
    opening.catch(() => undefined);
    expect(await refused.runUntilExit()).toBe(2);
    const err = refused.output.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.level === 'error');
    expect(err, refused.output).toMatchObject({ field: 'HOST' });
    expect(err.msg).toMatch(/HOST is "0\.0\.0\.0", reachable from the network, but no API token is configured/);
    expect(err.msg).toMatch(/RSTAR_API_TOKENS_FILE/);
    expect(err.msg).toMatch(/RSTAR_ALLOW_INSECURE=true/);

    await opening;
    await until(async () => open.output.includes('"event":"listening"'), 'the listening line', { timeoutMs: 30_000 });
    expect(open.output).toMatch(/"level":"error".*INSECURE: tool-execution listens on 0\.0\.0\.0 with HTTP authentication off/);
    expect(listeningLine(open.output).address).toBe(`0.0.0.0:${port}`);
    await open.stop();
  }, 240_000);

  it('tokens per caller and scope: the engine key runs no code on tool-execution; a cookie is taken on GET only, not on a form POST to /run_code', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rstar-tokens-'));
    dirs.push(dir);
    const g = generateSecrets({ outDir: join(dir, 'secrets'), principals: ['tool-execution'] });
    const port = await freeLocalPort();
    const svc = new ServiceProcess({ name: 'tool-execution', entry: 'services/tool-execution/src/main.ts', port, env: { RSTAR_NATS_URL: 'off', RSTAR_SANDBOX_WORKERS: '1', RSTAR_PYTHON: PYTHON, RSTAR_SECRETS_DIR: g.principals['tool-execution'].dir } });
    await svc.start();
    stops.push(() => svc.stop());
    const url = `http://127.0.0.1:${port}`;
    const exec = (headers: Record<string, string>) => fetch(`${url}/v1/execute`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ code: 'print(6*7)' }) });
    expect((await exec({ authorization: `Bearer ${g.tokens['engine-client']}` })).status).toBe(401);
    expect((await exec({ authorization: `Bearer ${g.tokens['service-optimization']}` })).status).toBe(403);
    const ok = await exec({ authorization: `Bearer ${g.tokens['tool-client']}` });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { stdout: string }).stdout).toBe('42\n');
    // What another site's page can make a browser send: a form POST carrying the operator's cookie.
    const form = await fetch(`${url}/run_code`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `rstar_token=${g.tokens.operator}`, origin: 'https://evil.example' },
      body: 'code=print(1)&language=python',
    });
    expect(form.status).toBe(401);
    // The dashboard's reads still work with the cookie.
    expect((await fetch(`${url}/v1/sandbox`, { headers: { cookie: `rstar_token=${g.tokens.dashboard}` } })).status).toBe(200);
    await svc.stop();
  }, 180_000);

  it('in secured mode a service does not use a Postgres superuser: not ready, naming the role and the fix', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rstar-pgrole-'));
    dirs.push(dir);
    const g = generateSecrets({ outDir: join(dir, 'secrets'), principals: ['resampling'] });
    const port = await freeLocalPort();
    const svc = new ServiceProcess({
      name: 'resampling', entry: 'services/resampling/src/main.ts', port, waitFor: 'live',
      env: { RSTAR_SECRETS_DIR: g.principals.resampling.dir, RSTAR_REQUIRE_AUTH: 'true', RSTAR_DATABASE_URL: PG_URL, RSTAR_NATS_URL: `nats://127.0.0.1:${await freeLocalPort()}` },
    });
    await svc.start();
    stops.push(() => svc.stop());
    const r = await until(async () => {
      const x = await fetch(`http://127.0.0.1:${port}/health/ready`, { headers: { authorization: `Bearer ${g.tokens.dashboard}` } });
      const body = (await x.json()) as any;
      return body.error?.postgres?.lastError ? { status: x.status, body } : null;
    }, 'resampling to report why Postgres is refused', { timeoutMs: 90_000 });
    expect(r.status).toBe(503);
    expect(r.body.error.postgres.lastError).toMatch(/^RSTAR_DATABASE_URL: it connects as "[^"]+", a superuser; with RSTAR_REQUIRE_AUTH a service uses its own role \(`rstar db roles`/);
    expect(svc.running).toBe(true);
    await svc.stop();
  }, 180_000);

  it('listens on 127.0.0.1 by default and says so', async () => {
    const svc = await plain();
    const port = svc.opts.port;
    await until(async () => svc.output.includes('"event":"listening"'), 'the listening line', { timeoutMs: 30_000 });
    expect(listeningLine(svc.output)).toMatchObject({ address: `127.0.0.1:${port}`, url: `http://127.0.0.1:${port}` });
  }, 180_000);

  it('tool-execution without a usable bubblewrap is not ready, says why, and runs no program; RSTAR_SANDBOX_ISOLATION=none is the explicit way round', async () => {
    // A bwrap that fails the way it does where unprivileged user namespaces are off, first on PATH.
    const env = { RSTAR_NATS_URL: 'off', RSTAR_SANDBOX_WORKERS: '1', RSTAR_PYTHON: PYTHON, PATH: `${noBwrapDir()}:${process.env.PATH}` };
    // The explicit way round (RSTAR_SANDBOX_ISOLATION=none, same PATH) starts while the other one does.
    const none = plain();
    none.catch(() => undefined);
    const port = await freeLocalPort();
    const svc = new ServiceProcess({ name: 'tool-execution', entry: 'services/tool-execution/src/main.ts', port, waitFor: 'live', env });
    await svc.start();
    stops.push(() => svc.stop());
    const r = await ready(port);
    expect(r.status).toBe(503);
    expect(r.body.error.sandbox).toMatchObject({ status: 'down', isolation: 'none' });
    expect(r.body.error.sandbox.reason).toMatch(/bubblewrap unusable: .*No permissions.*install bubblewrap.*RSTAR_SANDBOX_ISOLATION=none/);
    const exec = await fetch(`http://127.0.0.1:${port}/v1/execute`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'print("ran")' }),
    });
    const result = (await exec.json()) as { status: string; stdout?: string };
    expect(result.stdout ?? '').not.toContain('ran');
    expect(result.status).toBe('sandbox_error');
    await svc.stop();

    expect((await ready((await none).opts.port)).body.info.sandbox).toMatchObject({ status: 'up', isolation: 'none' });
  }, 240_000);
});
