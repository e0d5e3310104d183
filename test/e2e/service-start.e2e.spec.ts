import { afterAll, describe, expect, it } from 'vitest';
import { freeLocalPort, until } from '@rstar/testing';
import { createPrivateDatabase, ServiceProcess, startPrivateNats, type PrivateDatabase, type PrivateNats } from '../support/service-process';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';

async function ready(port: number): Promise<{ status: number; body: any }> {
  const r = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(5_000) });
  return { status: r.status, body: await r.json() };
}

/**
 * How a service starts when the world is not ready: a late dependency is waited for (not-ready, then
 * ready once it comes up; the process never exits), a bad setting ends the start with one line naming the
 * variable and the fix, and a port already taken names the rstar service that holds it.
 */
describe('service start: late dependencies, bad settings, port clashes', () => {
  const stops: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  }, 60_000);

  it('waits for a NATS that is not up yet: 503 naming nats, then ready once it comes up, without exiting', async () => {
    const db: PrivateDatabase = await createPrivateDatabase(PG_URL, `svcstart_${process.pid}_${Date.now()}`);
    stops.push(() => db.drop());
    const natsPort = await freeLocalPort();
    const svc = new ServiceProcess({
      name: 'resampling', entry: 'services/resampling/src/main.ts', port: await freeLocalPort(), waitFor: 'live',
      env: { RSTAR_NATS_URL: `nats://127.0.0.1:${natsPort}`, RSTAR_DATABASE_URL: db.url },
    });
    await svc.start();
    stops.push(() => svc.stop());
    // Postgres (and the migrations run on it) may take a moment on a loaded host: wait for it, NATS stays down.
    const before = await until(async () => {
      const r = await ready(svc.opts.port);
      return r.body.details?.postgres?.status === 'up' ? r : null;
    }, 'resampling to reach Postgres', { timeoutMs: 90_000 });
    expect(before.status).toBe(503);
    expect(before.body.error.nats).toMatchObject({ status: 'down' });
    expect(before.body.details.postgres).toMatchObject({ status: 'up' });
    const nats: PrivateNats = await startPrivateNats(natsPort);
    stops.push(() => nats.stop());
    await until(async () => (await ready(svc.opts.port)).status === 200, 'resampling to become ready once NATS is up', { timeoutMs: 90_000 });
    expect(svc.running).toBe(true);
    expect((await ready(svc.opts.port)).body.info).toMatchObject({ nats: { status: 'up' }, postgres: { status: 'up' }, resampling: { status: 'up' } });
  }, 180_000);

  it('ends the start on a bad setting with exit code 2 and a line naming the variable and the fix', async () => {
    const svc = new ServiceProcess({ name: 'optimization', entry: 'services/optimization/src/main.ts', port: await freeLocalPort(), waitFor: 'live', env: { RSTAR_DATABASE_URL: 'mysql://nope', RSTAR_ENGINES: 'builtin=http://127.0.0.1:1' } });
    expect(await svc.runUntilExit()).toBe(2);
    const lines = svc.output.split('\n').filter(Boolean);
    expect(lines, svc.output).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({ level: 'error', field: 'RSTAR_DATABASE_URL' });
    expect(JSON.parse(lines[0]).msg).toMatch(/^RSTAR_DATABASE_URL is "mysql:\/\/nope": must be a postgres:\/\/ URL; set it to the Postgres archive, e\.g\. postgres:\/\//);
    const noEngines = new ServiceProcess({ name: 'policy-serving', entry: 'services/policy-serving/src/main.ts', port: await freeLocalPort(), waitFor: 'live', env: { RSTAR_ENGINES: '' } });
    expect(await noEngines.runUntilExit()).toBe(2);
    expect(JSON.parse(noEngines.output.trim()).msg).toMatch(/^RSTAR_ENGINES is "": names no engine; set it to e\.g\. "sglang=http/);
  }, 120_000);

  it('names the rstar service that holds a port another one is told to use', async () => {
    const port = await freeLocalPort();
    const first = new ServiceProcess({ name: 'tool-execution', entry: 'services/tool-execution/src/main.ts', port, waitFor: 'live', env: { RSTAR_NATS_URL: 'off', RSTAR_SANDBOX_WORKERS: '1' } });
    await first.start();
    stops.push(() => first.stop());
    const second = new ServiceProcess({ name: 'reward-grading', entry: 'services/reward-grading/src/main.ts', port, waitFor: 'live', env: { RSTAR_GRADER_SANDBOX_WORKERS: '1' } });
    expect(await second.runUntilExit()).toBe(2);
    const line = second.output.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.component === 'reward-grading' && l.level === 'error');
    expect(line.msg).toMatch(new RegExp(`^reward-grading: port ${port} is already in use by the rstar service "tool-execution" \\(pid \\d+\\); set PORT to a free port$`));
  }, 120_000);
});
