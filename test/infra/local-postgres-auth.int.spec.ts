import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { freeLocalPort } from '@rstar/testing';

const LOCAL = resolve(__dirname, '../../infra/local');
const pgBin = (() => {
  try {
    return execFileSync('bash', ['-c', 'ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1'], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
})();
// The NATS the tests already use: start.sh finds it answering and leaves it alone.
const natsPort = new URL(process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222').port || '4222';

/** Run an infra/local script with its own state folder and Postgres port; resolves with exit code and output. */
function script(name: string, env: Record<string, string>): { status: number | null; out: string } {
  const r = spawnSync('bash', [join(LOCAL, name)], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

async function connect(url: string): Promise<Client> {
  const c = new Client({ connectionString: url });
  await c.connect();
  return c;
}

/** The SQLSTATE (or message) a login fails with; null when it succeeds. */
async function loginFails(url: string): Promise<string | null> {
  try {
    await (await connect(url)).end();
    return null;
  } catch (e) {
    return (e as { code?: string }).code ?? (e as Error).message;
  }
}

/**
 * infra/local/start.sh on a cluster of its own (a temporary RSTAR_STATE_DIR and a free RSTAR_PG_PORT; the
 * shared Postgres of the tests is never touched): a new cluster asks every connection for a password
 * (scram-sha-256), its superuser `postgres` has a random one kept 0600 beside the data, and the
 * rstar/rstar test role works as before; a cluster made earlier with trust auth still starts, with a note.
 */
describe.skipIf(!pgBin)('local Postgres of start.sh: passwords (scram-sha-256) on a new cluster, earlier clusters still start', () => {
  const dirs: string[] = [];
  const stops: Array<Record<string, string>> = [];
  const stateDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'rstar-pgauth-'));
    // The cluster runs as the postgres user when the script runs as root: it must reach its folder.
    chmodSync(d, 0o755);
    dirs.push(d);
    return d;
  };
  const cleanups: Array<() => unknown> = [];
  afterAll(() => {
    for (const c of cleanups) c();
    for (const env of stops) script('stop.sh', env);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }, 120_000);

  it('a new cluster: scram for every connection, the test role rstar/rstar, the superuser only with its password file', async () => {
    const env = { RSTAR_STATE_DIR: stateDir(), RSTAR_PG_PORT: String(await freeLocalPort()), RSTAR_NATS_PORT: natsPort };
    stops.push(env);
    const started = script('start.sh', env);
    expect(started.status, started.out).toBe(0);
    expect(started.out).not.toMatch(/trusts local connections/);
    const url = `postgres://rstar:rstar@127.0.0.1:${env.RSTAR_PG_PORT}/rstar_test`;
    expect(started.out).toContain(`export RSTAR_TEST_DATABASE_URL=${url}`);

    const c = await connect(url);
    try {
      const rules = (await c.query(`SELECT DISTINCT auth_method FROM pg_hba_file_rules`)).rows.map((r) => r.auth_method);
      expect(rules).toEqual(['scram-sha-256']);
      expect((await c.query(`SELECT rolpassword LIKE 'SCRAM-SHA-256$%' AS scram FROM pg_authid WHERE rolname = 'rstar'`)).rows[0].scram).toBe(true);
    } finally {
      await c.end();
    }
    expect(await loginFails(`postgres://rstar:wrong@127.0.0.1:${env.RSTAR_PG_PORT}/rstar_test`)).toBe('28P01');
    expect(await loginFails(`postgres://rstar@127.0.0.1:${env.RSTAR_PG_PORT}/rstar_test`)).not.toBeNull();
    expect(await loginFails(`postgres://postgres@127.0.0.1:${env.RSTAR_PG_PORT}/postgres`)).not.toBeNull();
    const pwfile = join(env.RSTAR_STATE_DIR, 'pg-superuser.password');
    expect(statSync(pwfile).mode & 0o077).toBe(0);
    expect(await loginFails(`postgres://postgres:${encodeURIComponent(readFileSync(pwfile, 'utf8').trim())}@127.0.0.1:${env.RSTAR_PG_PORT}/postgres`)).toBeNull();

    // Stopped and started again: the existing scram cluster comes back the same way.
    expect(script('stop.sh', env).status).toBe(0);
    const again = script('start.sh', env);
    expect(again.status, again.out).toBe(0);
    expect(await loginFails(url)).toBeNull();
  }, 180_000);

  it('start-secured.sh refuses while the superuser rstar keeps the password rstar, naming the fix, and starts once it is changed', async () => {
    const env = {
      RSTAR_STATE_DIR: stateDir(),
      RSTAR_PG_PORT: String(await freeLocalPort()),
      RSTAR_NATS_PORT: natsPort,
      RSTAR_SECURE_NATS_PORT: String(await freeLocalPort()),
      RSTAR_ALLOW_INSECURE: '',
    };
    stops.push(env);
    const started = script('start.sh', env);
    expect(started.status, started.out).toBe(0);
    const secrets = join(env.RSTAR_STATE_DIR, 'secrets');
    // Whatever the assertions say, the secured nats-server this test may have started is stopped.
    cleanups.push(() => spawnSync('bash', [join(LOCAL, 'start-secured.sh'), 'stop'], { env: { ...process.env, ...env }, timeout: 60_000 }));
    const refused = script('start-secured.sh', { ...env, RSTAR_SECRETS_ROOT: secrets });
    expect(refused.status, refused.out).toBe(3);
    expect(refused.out).toMatch(/refusing to start: .*superuser rstar log in with the well-known password 'rstar'.*ALTER ROLE rstar PASSWORD/);
    expect(existsSync(join(secrets, 'nats-auth.conf'))).toBe(false);

    const c = await connect(`postgres://rstar:rstar@127.0.0.1:${env.RSTAR_PG_PORT}/postgres`);
    try {
      await c.query(`ALTER ROLE rstar PASSWORD 'not-the-default-1'`);
    } finally {
      await c.end();
    }
    const ok = script('start-secured.sh', { ...env, RSTAR_SECRETS_ROOT: secrets });
    expect(ok.status, ok.out).toBe(0);
    expect(ok.out).toContain(`export RSTAR_NATS_URL=nats://127.0.0.1:${env.RSTAR_SECURE_NATS_PORT}`);
    expect(existsSync(join(secrets, 'nats-auth.conf'))).toBe(true);
  }, 240_000);

  it('a cluster made before (trust auth, no password file) still starts and serves rstar/rstar, and says how to switch', async () => {
    const env = { RSTAR_STATE_DIR: stateDir(), RSTAR_PG_PORT: String(await freeLocalPort()), RSTAR_NATS_PORT: natsPort };
    const data = join(env.RSTAR_STATE_DIR, 'pg');
    mkdirSync(data);
    const asPg = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
    if (asPg.length) execFileSync('chown', ['postgres:postgres', data]);
    // What start.sh did until now.
    execFileSync(asPg[0] ?? join(pgBin, 'initdb'), [...asPg.slice(1), ...(asPg.length ? [join(pgBin, 'initdb')] : []), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], { stdio: 'ignore' });
    execFileSync('bash', ['-c', `printf "listen_addresses = '127.0.0.1'\\nport = ${env.RSTAR_PG_PORT}\\nunix_socket_directories = '/tmp'\\n" >> ${data}/postgresql.conf`]);
    stops.push(env);
    const started = script('start.sh', env);
    expect(started.status, started.out).toBe(0);
    expect(started.out).toMatch(/trusts local connections without a password; docs\/operations\.md \(Local Postgres\)/);
    expect(existsSync(join(env.RSTAR_STATE_DIR, 'pg-superuser.password'))).toBe(false);
    expect(await loginFails(`postgres://rstar:rstar@127.0.0.1:${env.RSTAR_PG_PORT}/rstar_test`)).toBeNull();
  }, 180_000);
});
