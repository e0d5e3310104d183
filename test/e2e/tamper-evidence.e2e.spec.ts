import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { chainHash, EventStore } from '@rstar/event-store';
import { JetStreamBus, securedBusOptionsFromEnv } from '@rstar/messaging';
import { checkArchiveIntegrity, createRegrader } from '@rstar/replay';
import { Archiver } from '@rstar/runtime';
import { generateSecrets, producersOf, securityFromEnv, type GeneratedSecrets, type Principal } from '@rstar/security';
import { createLogger } from '@rstar/telemetry';
import { generateSyntheticRun, natsServerMissing, sampleEvent, skipUnlessCi, startNatsServer, until, type NatsServerProcess } from '@rstar/testing';

const ROOT = resolve(__dirname, '../..');
const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const RUNS = ['honest', 'cut', 'strip', 'nulled', 'append', 'trigger', 'stripall', 'cutdel'] as const;

/**
 * Issue 27, build 3: runs archived by the control plane's archiver on a secured stack (every event signed
 * by its producer, checkpoints of each run's chain signed by the archiver every 10 events and sealed at
 * the run's end); then each tampering the issue describes, done as the database superuser. `replay
 * verify`'s integrity check fails each, naming the event, stream position or checkpoint; the honest run,
 * with a dead letter, verifies. With `--trusted-keys` the run must be secured, so stripping every
 * signature or cutting the tail also fails when the checkpoints are deleted with it (the CLI's exit code).
 * Skipped without nats-server only outside CI.
 */
describe.skipIf(skipUnlessCi(natsServerMissing()))('tamper evidence: signed checkpoints, sealed runs, every event signed', () => {
  let dir: string;
  let secrets: GeneratedSecrets;
  let nats: NatsServerProcess;
  let store: EventStore;
  let archiver: Archiver;
  const schema = `tam${process.pid}${Date.now().toString(36)}`;
  const t = `"${schema}".events`;
  const buses = new Map<Principal, JetStreamBus>();
  const log = createLogger('tamper-test', { write: () => undefined });
  const runOf = (name: string) => `run-${name}-${schema}`;
  const trusted = () => join(secrets.outDir, 'trusted-keys.json');
  const superuser = async (sql: string, params: unknown[] = []) => {
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    try {
      return await c.query(sql, params);
    } finally {
      await c.end();
    }
  };
  const busOf = async (p: Principal) => {
    if (!buses.has(p)) buses.set(p, await JetStreamBus.connect({ servers: nats.url, name: p, logger: log, publishDeadlineMs: 10_000, ...securedBusOptionsFromEnv(p, { RSTAR_SECRETS_DIR: secrets.principals[p].dir }) }));
    return buses.get(p)!;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rstar-tamper-'));
    secrets = generateSecrets({ outDir: join(dir, 'secrets') });
    nats = await startNatsServer({ config: secrets.natsAuthConfig });
    store = await EventStore.connect({ connectionString: PG_URL, schema });
    const signer = securityFromEnv({ RSTAR_SECRETS_DIR: secrets.principals['control-plane'].dir }, 'control-plane').signer;
    archiver = new Archiver(await busOf('control-plane'), store, { logger: log, maxWaitMs: 5, signer, checkpointEvery: 10 });
    await archiver.start();
    for (const name of RUNS) {
      const events = await generateSyntheticRun({ grade: createRegrader(), runId: runOf(name), seed: 5, steps: 1, promptsPerStep: 1, samples: 4, keep: 2, mode: 'weighted', responseChars: 20 });
      // Each event from the principal that produces its type, in order (the run's own causality).
      for (const e of events) await (await busOf(producersOf(e.type)[0])).publish(e);
      if (name === 'honest') {
        // A forged end from tool-execution's credentials: refused, dead-lettered, outside the chain.
        const forged = sampleEvent('RunCompleted', { runId: runOf(name), key: 'forged-end', producer: 'optimization' });
        await (await busOf('tool-execution')).publishRaw('rstar.tool.completed', JSON.stringify(forged), `rstar.tool.completed|${forged.id}`);
      }
    }
    await until(async () => {
      for (const name of RUNS) if (!(await store.checkpoints.list(runOf(name))).some((c) => c.sealed)) return false;
      return (await store.quarantined(runOf('honest'))).length > 0;
    }, 'every run archived and sealed, and the forged end quarantined', { timeoutMs: 120_000 });
  }, 240_000);
  afterAll(async () => {
    await archiver?.stop();
    for (const b of buses.values()) await b.close().catch(() => undefined);
    await store?.close();
    await superuser(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await nats?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  /** `rstar replay verify RUN --trusted-keys` as an operator runs it (no tool re-execution). */
  const verifyCli = (runId: string) =>
    spawnSync(join(ROOT, 'node_modules/.bin/tsx'), ['libs/cli/src/main.ts', 'replay', 'verify', runId, '--database', PG_URL, '--schema', schema, '--no-exec', '--trusted-keys', trusted()], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 180_000,
    });
  const deleteCheckpoints = (runId: string) => superuser(`BEGIN; SET LOCAL rstar.migrating = 'on'; DELETE FROM "${schema}".chain_checkpoints WHERE run_id = '${runId}'; COMMIT;`);

  /** Rewrite a run's chain hashes from its (changed) rows, as someone who knows the algorithm would. */
  const rechain = async (runId: string) => {
    const rows = (await superuser(`SELECT id, type, version, run_id, stream_id, stream_position, data, meta FROM ${t} WHERE run_id = $1 ORDER BY stream_id, stream_position`, [runId])).rows;
    let prev: Buffer | null = null;
    let stream = '';
    const updates: string[] = [];
    for (const r of rows) {
      if (r.stream_id !== stream) [stream, prev] = [r.stream_id, null];
      const h: Buffer = chainHash(prev, { id: r.id, type: r.type, version: r.version, runId: r.run_id, streamId: r.stream_id, streamPosition: Number(r.stream_position), data: r.data, meta: r.meta });
      updates.push(`UPDATE ${t} SET hash = '\\x${h.toString('hex')}'::bytea WHERE id = '${r.id}';`);
      prev = h;
    }
    await superuser(`BEGIN; SET LOCAL rstar.migrating = 'on'; ${updates.join(' ')} COMMIT;`);
  };

  it('the honest run, with a dead letter of a forged event, verifies: chain, signatures and sealed checkpoint; `rstar replay verify --trusted-keys` exits 0', async () => {
    const r = await checkArchiveIntegrity(store, runOf('honest'), { trustedKeysFile: trusted() });
    expect(r.problems).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.checkpoints).toMatchObject({ ok: true, sealed: true });
    expect(r.signatures).toMatchObject({ invalid: 0, unsigned: 0 });
    const cli = verifyCli(runOf('honest'));
    expect(cli.status, cli.stdout + cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/checkpoints: ok \(\d+, sealed\)/);
  }, 200_000);

  it('a cut tail (the run\'s end and its last reward deleted) fails, naming the stream and the checkpoint; `rstar replay verify` exits non-zero', async () => {
    const runId = runOf('cut');
    await superuser(`BEGIN; SET LOCAL rstar.migrating = 'on';
      DELETE FROM ${t} WHERE run_id = '${runId}' AND (type = 'RunCompleted' OR id = (SELECT id FROM ${t} WHERE run_id = '${runId}' AND type = 'RewardAssigned' ORDER BY global_position DESC LIMIT 1)); COMMIT;`);
    const r = await checkArchiveIntegrity(store, runId, { trustedKeysFile: trusted() });
    expect(r.ok).toBe(false);
    expect(r.problems.join('\n')).toMatch(/cut tail: stream \S+ ends at position \d+, but checkpoint \d+ saw it at position \d+/);
    const cli = verifyCli(runId);
    expect(cli.status, cli.stderr).not.toBe(0);
    expect(cli.stdout).toMatch(/checkpoints: FAILED — .*cut tail/);
  }, 200_000);

  it('stripped signatures with changed data and a recomputed chain fail: unsigned events in a secured run, and heads the checkpoint did not sign', async () => {
    const runId = runOf('strip');
    await superuser(`BEGIN; SET LOCAL rstar.migrating = 'on';
      UPDATE ${t} SET meta = meta - 'signature' WHERE run_id = '${runId}' AND type IN ('RewardAssigned', 'StepCompleted');
      UPDATE ${t} SET data = jsonb_set(data, '{reward}', '0.123') WHERE run_id = '${runId}' AND type = 'RewardAssigned'; COMMIT;`);
    await rechain(runId);
    const r = await checkArchiveIntegrity(store, runId, { trustedKeysFile: trusted() });
    expect(r.chain.ok).toBe(true);
    expect(r.ok).toBe(false);
    expect(r.problems.join('\n')).toMatch(/unsigned event\(s\) in a run verified with --trusted-keys, first (RewardAssigned|StepCompleted):/);
    expect(r.problems.join('\n')).toMatch(/its hash [0-9a-f]+ is not the [0-9a-f]+ checkpoint \d+ signed/);
  });

  it('NULLed hashes fail ("archived before the chain" no longer excuses them)', async () => {
    const runId = runOf('nulled');
    await superuser(`BEGIN; SET LOCAL rstar.migrating = 'on'; UPDATE ${t} SET hash = NULL WHERE run_id = '${runId}'; COMMIT;`);
    const r = await checkArchiveIntegrity(store, runId, { trustedKeysFile: trusted() });
    expect(r.ok).toBe(false);
    expect(r.problems.join('\n')).toMatch(/event\(s\) without a hash in a run archived with the chain/);
    expect(r.problems.join('\n')).toMatch(/its hash NULL is not the [0-9a-f]+ checkpoint/);
  });

  it('a row appended with a valid chain hash after the run was sealed fails, naming the stream', async () => {
    const runId = runOf('append');
    const head = (await superuser(`SELECT stream_id, stream_position, hash FROM ${t} WHERE run_id = $1 ORDER BY global_position DESC LIMIT 1`, [runId])).rows[0];
    const forged = sampleEvent('RunFailed', { runId, key: `${runId}-forged`, producer: 'optimization' }) as RstarEvent;
    const pos = Number(head.stream_position) + 1;
    const h = chainHash(head.hash, { id: forged.id, type: forged.type, version: forged.version, runId, streamId: head.stream_id, streamPosition: pos, data: forged.data, meta: forged.meta });
    await superuser(`INSERT INTO ${t} (id, type, version, run_id, stream_id, stream_position, data, meta, hash) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9)`, [
      forged.id, forged.type, forged.version, runId, head.stream_id, pos, JSON.stringify(forged.data), JSON.stringify(forged.meta), h,
    ]);
    const r = await checkArchiveIntegrity(store, runId, { trustedKeysFile: trusted() });
    expect(r.chain.ok).toBe(true);
    expect(r.ok).toBe(false);
    expect(r.problems.join('\n')).toMatch(new RegExp(`stream ${head.stream_id} has events up to position ${pos} after the run was sealed at ${pos - 1}`));
    expect(r.problems.join('\n')).toMatch(/unsigned event\(s\) in a run verified with --trusted-keys, first RunFailed:/);
  });

  it('an edit with the append-only trigger disabled fails at that event', async () => {
    const runId = runOf('trigger');
    await superuser(`ALTER TABLE ${t} DISABLE TRIGGER events_append_only_rows;
      UPDATE ${t} SET data = jsonb_set(data, '{reward}', '0.123') WHERE id = (SELECT id FROM ${t} WHERE run_id = '${runId}' AND type = 'RewardAssigned' LIMIT 1);
      ALTER TABLE ${t} ENABLE TRIGGER events_append_only_rows;`);
    const r = await checkArchiveIntegrity(store, runId, { trustedKeysFile: trusted() });
    expect(r.ok).toBe(false);
    expect(r.problems[0]).toMatch(/^chain broken at event RewardAssigned:/);
  });

  it('every signature stripped, the chain recomputed and the checkpoints deleted: `rstar replay verify --trusted-keys` exits non-zero naming the unsigned events and the missing seal', async () => {
    const runId = runOf('stripall');
    await superuser(`BEGIN; SET LOCAL rstar.migrating = 'on'; UPDATE ${t} SET meta = meta - 'signature' WHERE run_id = '${runId}'; COMMIT;`);
    await rechain(runId);
    await deleteCheckpoints(runId);
    const cli = verifyCli(runId);
    expect(cli.status, cli.stdout + cli.stderr).not.toBe(0);
    expect(cli.stdout).toMatch(/hash chain: ok/);
    expect(cli.stdout).toMatch(/signatures: \d+ UNSIGNED — first: \S+ \(0 valid; with --trusted-keys every event must be signed\)/);
    expect(cli.stdout).toMatch(/checkpoints: FAILED — the run ended but no sealed checkpoint exists.*no checkpoint of the archiver \("control-plane"\) covers the run's chain/);
  }, 200_000);

  it('a cut tail with its checkpoints deleted: `rstar replay verify --trusted-keys` exits non-zero, the run not sealed', async () => {
    const runId = runOf('cutdel');
    await superuser(`BEGIN; SET LOCAL rstar.migrating = 'on';
      DELETE FROM ${t} WHERE run_id = '${runId}' AND (type = 'RunCompleted' OR id = (SELECT id FROM ${t} WHERE run_id = '${runId}' AND type = 'RewardAssigned' ORDER BY global_position DESC LIMIT 1));
      DELETE FROM "${schema}".chain_checkpoints WHERE run_id = '${runId}'; COMMIT;`);
    const cli = verifyCli(runId);
    expect(cli.status, cli.stdout + cli.stderr).not.toBe(0);
    expect(cli.stdout).toMatch(/signatures: \d+ valid, 0 unsigned/);
    expect(cli.stdout).toMatch(/checkpoints: FAILED — the run is not sealed: .*its tail was cut; pass --allow-unsealed/);
  }, 200_000);
});
