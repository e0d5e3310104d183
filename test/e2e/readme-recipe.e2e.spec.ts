import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { until } from '@rstar/testing';

const ROOT = resolve(__dirname, '../..');
const SERVICES = { 'control-plane': 3000, 'policy-serving': 3001, 'tool-execution': 3002, 'reward-grading': 3003, resampling: 3004, optimization: 3005 } as const;
type Service = keyof typeof SERVICES;

/** The fenced bash block under README's "## Running distributed" heading, as written. */
function readmeRecipe(): string {
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Running distributed'));
  const m = /```bash\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('README.md has no ```bash block under "## Running distributed"');
  return m[1];
}

/** Pids of the processes this test's recipe started (their environment carries its stream name). */
function recipeProcesses(tag: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${d}/environ`, 'latin1').split('\0').includes(`RSTAR_STREAM=${tag.toUpperCase()}`)) pids.push(Number(d));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

function portTaken(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = tcpConnect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), res(true)));
    s.once('error', () => res(false));
  });
}

async function json(url: string): Promise<any> {
  const r = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return r.json();
}

/**
 * README's distributed recipe, run as a new user would: its bash block verbatim (start.sh, the exports, the
 * built-in engine, `pnpm nx run-many --target=serve`, `pnpm rstar train --remote --preset smoke`) on the
 * default ports. The only additions are isolation settings in the environment (a stream, subject prefix and
 * schema of the test's own), which every service and the CLI read. Then: the run completed, every service
 * reported ready, every event of the run is archived once, and every service stops cleanly on SIGTERM.
 */
describe("README's distributed recipe, verbatim", () => {
  const tag = `readme_${process.pid}_${Date.now().toString(36)}`;
  const env = { ...process.env, RSTAR_STREAM: tag.toUpperCase(), RSTAR_SUBJECT_PREFIX: tag, RSTAR_DB_SCHEMA: tag, RSTAR_LOG_LEVEL: 'warn' };
  const recipe = readmeRecipe();
  let shell: ChildProcess;
  let out = '';
  let exit: number | null = null;
  const readySeen = new Set<Service>();
  const pids = new Map<Service, number>();

  beforeAll(async () => {
    const taken = [];
    for (const port of [...Object.values(SERVICES), 30000]) if (await portTaken(port)) taken.push(port);
    if (taken.length) throw new Error(`the recipe uses the default ports, but ${taken.join(', ')} are taken on this machine; free them to run this test`);
    shell = spawn('bash', ['-e', '-c', recipe], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    shell.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    shell.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<void>((res) => shell.once('exit', (code) => ((exit = code), res())));
    // Watch every service come up while the recipe runs.
    const watch = (async () => {
      while (exit === null) {
        for (const [svc, port] of Object.entries(SERVICES) as Array<[Service, number]>) {
          if (readySeen.has(svc)) continue;
          try {
            const r = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(2_000) });
            if (r.ok) readySeen.add(svc);
          } catch {
            // not listening yet
          }
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    await exited;
    await watch;
    for (const [svc, port] of Object.entries(SERVICES) as Array<[Service, number]>) {
      const live = await json(`http://127.0.0.1:${port}/health/live`).catch(() => null);
      if (live?.pid) pids.set(svc, live.pid);
    }
  }, 900_000);

  afterAll(async () => {
    // nx, the watchers and the engine the block left running (nx starts each task in a session of its own).
    const kill = (signal: NodeJS.Signals) => recipeProcesses(tag).forEach((pid) => { try { process.kill(pid, signal); } catch { /* gone */ } });
    kill('SIGTERM');
    await until(() => recipeProcesses(tag).length === 0, 'the recipe processes to exit', { timeoutMs: 30_000 }).catch(() => kill('SIGKILL'));
    const bus = await JetStreamBus.connect({ servers: process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222', stream: tag.toUpperCase(), subjectPrefix: tag }).catch(() => null);
    await bus?.jsm.streams.delete(tag.toUpperCase()).catch(() => undefined);
    await bus?.close();
    const c = new Client({ connectionString: 'postgres://rstar:rstar@127.0.0.1:5432/rstar' });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE; DROP SCHEMA IF EXISTS "${tag}_read" CASCADE`);
    await c.end();
  }, 60_000);

  it('runs to the end: the remote run completes and every service reported ready', () => {
    expect(exit, out.slice(-6000)).toBe(0);
    expect(out).toMatch(/run \S+ completed/);
    expect([...readySeen].sort(), out.slice(-3000)).toEqual(Object.keys(SERVICES).sort());
  });

  it('archives every event of the run exactly once', async () => {
    const runId = /run (\S+) completed/.exec(out)![1];
    const bus = await JetStreamBus.connect({ servers: process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222', stream: tag.toUpperCase(), subjectPrefix: tag });
    const store = await EventStore.connect({ connectionString: 'postgres://rstar:rstar@127.0.0.1:5432/rstar', schema: tag });
    try {
      const published = (await bus.jsm.streams.info(tag.toUpperCase())).state.messages;
      await until(async () => (await store.count()) === published, `the archive to hold all ${published} messages of the stream`, { timeoutMs: 60_000 });
      const byType = await store.countByType(runId);
      // The smoke preset: 2 steps x 4 prompts x (group 2 x oversample 2) rollouts.
      expect(byType).toMatchObject({ RunStarted: 1, RunCompleted: 1, StepStarted: 2, StepCompleted: 2, RolloutRequested: 32, RolloutCompleted: 32, RewardAssigned: 32, GroupResampled: 8 });
    } finally {
      await store.close();
      await bus.close();
    }
  });

  it('stops every service cleanly on SIGTERM (handlers drained, connections closed, exit 0)', async () => {
    expect(pids.size).toBe(6);
    for (const pid of pids.values()) process.kill(pid, 'SIGTERM');
    for (const [svc, port] of Object.entries(SERVICES) as Array<[Service, number]>) {
      await until(async () => !(await portTaken(port)), `${svc} to stop`, { timeoutMs: 30_000 });
    }
    await until(() => (out.match(/"event":"stopped","service":"[a-z-]+","code":0/g) ?? []).length >= 6, 'six "stopped" lines with exit code 0', { timeoutMs: 10_000 });
    // node --watch reports how each service process ended: "Completed" for exit code 0, "Failed" otherwise.
    for (const svc of Object.keys(SERVICES)) {
      await until(() => out.includes(`running 'services/${svc}/src/main.ts'`), `node --watch to report how ${svc} ended`, { timeoutMs: 10_000 });
      expect(out).toContain(`Completed running 'services/${svc}/src/main.ts'`);
    }
    expect(out).not.toMatch(/Failed running 'services\//);
  });
});
