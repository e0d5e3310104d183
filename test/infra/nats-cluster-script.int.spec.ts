import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JetStreamBus } from '@rstar/messaging';
import { until } from '@rstar/testing';
import { REPO_ROOT } from '../support/service-process';

const SCRIPT = join(REPO_ROOT, 'infra/local/nats-cluster.sh');

const portOpen = (port: number) =>
  new Promise<boolean>((res) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), res(true)));
    s.once('error', () => res(false));
  });

/** A base port whose nine ports (clients base+1..3, routes +2000, monitoring +4000) are all free. */
async function freeBase(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const ports = [1, 2, 3].flatMap((i) => [base + i, base + 2000 + i, base + 4000 + i]);
    if (!(await Promise.all(ports.map(portOpen))).some(Boolean)) return base;
  }
  throw new Error('no free range of ports for the NATS cluster');
}

// infra/local/nats-cluster.sh, the by-hand cluster the README and docs/deploy.md point to: it starts three
// routed nodes that hold an R3 stream, loses one to SIGKILL and takes it back, and stops cleanly. The
// failover under a real training run is test/e2e/nats-cluster-failover.e2e.spec.ts; this checks the script.
describe('infra/local/nats-cluster.sh', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'rstar-nats-script-'));
  let env: NodeJS.ProcessEnv = {};
  let bus: JetStreamBus | undefined;
  const sh = (...args: string[]) => spawnSync('bash', [SCRIPT, ...args], { encoding: 'utf8', env, timeout: 60_000 });

  afterAll(async () => {
    await bus?.close().catch(() => undefined);
    if (env.RSTAR_STATE_DIR) sh('stop', '--wipe');
    rmSync(stateDir, { recursive: true, force: true });
  }, 60_000);

  it('start, an R3 stream, kill a node (the stream keeps taking messages), start it again (it catches up), stop --wipe', async () => {
    const base = await freeBase();
    env = { ...process.env, RSTAR_STATE_DIR: stateDir, RSTAR_NATS_CLUSTER_BASE: String(base) };

    const started = sh('start');
    expect(started.status, started.stderr).toBe(0);
    const url = /^export RSTAR_NATS_URL=(\S+)$/m.exec(started.stdout)?.[1];
    expect(url).toBe([1, 2, 3].map((i) => `nats://127.0.0.1:${base + i}`).join(','));
    expect(started.stdout).toMatch(/^export RSTAR_STREAM_REPLICAS=3$/m);

    // The stream on all three nodes (JetStream needs a meta leader first: the nodes elect one after routing).
    const stream = `SCRIPT${process.pid}`;
    bus = await until(
      async () => JetStreamBus.connect({ servers: url!, stream, subjectPrefix: `script${process.pid}`, replicas: 3, name: 'nats-cluster-script' }).catch(() => undefined),
      'an R3 stream on the script\'s cluster',
      { timeoutMs: 60_000, everyMs: 500 },
    );
    const info = async () => bus!.jsm.streams.info(stream).catch(() => undefined);
    const first = await until(async () => ((await info())?.cluster?.replicas?.length === 2 ? info() : undefined), 'the stream\'s two followers', { timeoutMs: 30_000, everyMs: 250 });
    expect([first!.cluster!.leader, ...first!.cluster!.replicas!.map((r) => r.name)].sort()).toEqual(['n1', 'n2', 'n3']);
    for (let i = 0; i < 10; i++) await bus.publishRaw('probe.before', `m${i}`, `before-${i}`);

    const killed = sh('kill', '2');
    expect(killed.stdout).toContain('n2 killed (SIGKILL)');
    expect(await portOpen(base + 2)).toBe(false);
    // Two of three nodes still form a quorum: the stream takes messages (a publish retries through an election).
    for (let i = 0; i < 10; i++) await bus.publishRaw('probe.during', `m${i}`, `during-${i}`);
    expect(sh('status').stdout).toMatch(/^n2: not running$/m);

    const restarted = sh('start', '2');
    expect(restarted.status, restarted.stderr).toBe(0);
    await until(async () => {
      const i = await info();
      return i?.state.messages === 20 && i.cluster?.replicas?.find((r) => r.name === 'n2')?.current === true ? true : undefined;
    }, 'n2 to be a current replica of the 20-message stream again', { timeoutMs: 60_000, everyMs: 250 });
    expect(sh('status').stdout.match(/^n\d: running on/gm)).toHaveLength(3);

    await bus.close();
    bus = undefined;
    const stopped = sh('stop', '--wipe');
    expect(stopped.stdout).toContain('stores deleted');
    for (const i of [1, 2, 3]) await until(async () => !(await portOpen(base + i)) || undefined, `node n${i} to stop listening`, { timeoutMs: 30_000, everyMs: 200 });
    expect(existsSync(join(stateDir, 'nats-cluster'))).toBe(false);
  }, 240_000);

  it('refuses a node it does not have, naming the ones it has', () => {
    env = { ...process.env, RSTAR_STATE_DIR: stateDir };
    const r = sh('kill', '4');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('node must be 1, 2 or 3, got "4"');
  });
});
