import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { EventSigner, generateSecrets, producersOf, securityFromEnv, type GeneratedSecrets, type Principal } from '@rstar/security';
import { generateSyntheticRun } from '@rstar/testing';
import { checkArchiveIntegrity, formatIntegrity } from './archive.integrity';
import { createRegrader } from './reward.regrader';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';

/**
 * `checkArchiveIntegrity` with trusted keys expects a secured run (issue 27): what an insider with the
 * owner role can do to a run without leaving a valid signature or checkpoint behind must fail, and so must
 * every id collision recorded against a run. Runs signed by their producers and sealed by the archiver's
 * key, as the control plane archives them, on a real Postgres; the tampering done as its superuser.
 */
describe('archive integrity: a run verified with trusted keys must be signed, checkpointed and sealed', () => {
  const schema = `ai${process.pid}${Date.now().toString(36)}`;
  const t = `"${schema}".events`;
  const dir = mkdtempSync(join(tmpdir(), 'rstar-integrity-'));
  let secrets: GeneratedSecrets;
  let store: EventStore;
  let trustedKeysFile: string;
  const signers = new Map<Principal, EventSigner>();
  const signerOf = (p: Principal) => {
    if (!signers.has(p)) signers.set(p, securityFromEnv({ RSTAR_SECRETS_DIR: secrets.principals[p].dir }, p).signer!);
    return signers.get(p)!;
  };
  const superuser = async (sql: string, params: unknown[] = []) => {
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    try {
      return await c.query(sql, params);
    } finally {
      await c.end();
    }
  };
  /**
   * Archive a small run, by default signed by its producers and with the archiver's sealed checkpoint (or,
   * `ended: false`, an unsealed one and no end). `signed: false, checkpoint: false` archives what an owner
   * leaves after stripping every signature, recomputing the chain and deleting the checkpoints: unsigned
   * events under a valid chain, no checkpoint (tamper-evidence.e2e does that rewrite on an archived run).
   */
  const archive = async (runId: string, o: { ended?: boolean; signed?: boolean; checkpoint?: boolean } = {}): Promise<RstarEvent[]> => {
    const { ended = true, signed = true, checkpoint = true } = o;
    const generated = await generateSyntheticRun({ grade: createRegrader(), runId, seed: 7, steps: 1, promptsPerStep: 1, samples: 4, keep: 2, mode: 'weighted', responseChars: 20 });
    const events = generated.filter((e) => ended || e.type !== 'RunCompleted').map((e) => (signed ? signerOf(producersOf(e.type)[0]).sign([e])[0] : e));
    await store.appendBatch(events);
    if (checkpoint) await store.checkpoints.write(runId, ended, signerOf('control-plane'));
    return events;
  };

  beforeAll(async () => {
    secrets = generateSecrets({ outDir: join(dir, 'secrets') });
    trustedKeysFile = join(secrets.outDir, 'trusted-keys.json');
    store = await EventStore.connect({ connectionString: PG_URL, schema });
  });
  afterAll(async () => {
    await store?.close();
    await superuser(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('an honest sealed run verifies with trusted keys', async () => {
    const events = await archive('run-honest');
    const r = await checkArchiveIntegrity(store, 'run-honest', { trustedKeysFile });
    expect(r.problems).toEqual([]);
    expect(r.signatures).toMatchObject({ valid: events.length, unsigned: 0, invalid: 0 });
    expect(r.checkpoints).toMatchObject({ ok: true, checkpoints: 1, sealed: true, uncovered: 0 });
    expect(r.collisions).toEqual([]);
  });

  it('every signature stripped, the chain recomputed and the checkpoints deleted: unsigned events, no seal and no checkpoint are each named', async () => {
    const runId = 'run-stripped';
    const events = await archive(runId, { signed: false, checkpoint: false });
    const r = await checkArchiveIntegrity(store, runId, { trustedKeysFile });
    expect(r.chain.ok).toBe(true);
    expect(r.ok).toBe(false);
    expect(r.signatures).toMatchObject({ valid: 0, unsigned: events.length });
    const text = r.problems.join('\n');
    expect(text).toContain(`${events.length} unsigned event(s) in a run verified with --trusted-keys, first ${events[0].id}`);
    expect(text).toContain('the run ended but no sealed checkpoint exists');
    expect(text).toContain('no checkpoint of the archiver ("control-plane") covers the run\'s chain');
    // Without trusted keys it is an open-bus run that verifies: the keys are what make the run secured.
    expect((await checkArchiveIntegrity(store, runId)).ok).toBe(true);
  });

  it('every signature stripped and the checkpoints replaced by an unsigned seal: each checkpoint is named', async () => {
    const runId = 'run-reseal';
    await archive(runId, { signed: false, checkpoint: false });
    await store.checkpoints.write(runId, true, null);
    const r = await checkArchiveIntegrity(store, runId, { trustedKeysFile });
    expect(r.chain.ok).toBe(true);
    expect(r.ok).toBe(false);
    expect(r.problems.join('\n')).toContain('checkpoint 1 is not signed by the archiver ("control-plane")');
    expect(r.problems.join('\n')).toMatch(/unsigned event\(s\) in a run verified with --trusted-keys/);
  });

  it('a cut tail (the run\'s end and its last reward) with its checkpoints deleted is not sealed: it fails unless --allow-unsealed', async () => {
    const runId = 'run-cut';
    await archive(runId);
    await superuser(`BEGIN; SET LOCAL rstar.migrating = 'on';
      DELETE FROM ${t} WHERE run_id = '${runId}' AND (type = 'RunCompleted' OR id = (SELECT id FROM ${t} WHERE run_id = '${runId}' AND type = 'RewardAssigned' ORDER BY global_position DESC LIMIT 1));
      DELETE FROM "${schema}".chain_checkpoints WHERE run_id = '${runId}'; COMMIT;`);
    const r = await checkArchiveIntegrity(store, runId, { trustedKeysFile });
    expect(r.chain.ok).toBe(true);
    expect(r.signatures).toMatchObject({ unsigned: 0, invalid: 0 });
    expect(r.ok).toBe(false);
    expect(r.problems.join('\n')).toContain('the run is not sealed: no checkpoint seals it and no RunCompleted/RunFailed is archived, so it is still in progress, or its tail was cut; pass --allow-unsealed');
    expect(formatIntegrity(r)).toMatch(/checkpoints: FAILED — the run is not sealed/);
  });

  it('a run still in progress (signed, an unsealed checkpoint) fails as not sealed, and verifies with allowUnsealed', async () => {
    const runId = 'run-running';
    await archive(runId, { ended: false });
    const strict = await checkArchiveIntegrity(store, runId, { trustedKeysFile });
    expect(strict.problems).toEqual([expect.stringMatching(/^the run is not sealed/)]);
    const lenient = await checkArchiveIntegrity(store, runId, { trustedKeysFile, allowUnsealed: true });
    expect(lenient.problems).toEqual([]);
    expect(lenient.checkpoints).toMatchObject({ checkpoints: 1, sealed: false, uncovered: 0 });
    expect(formatIntegrity(lenient)).toContain('checkpoints: ok (1, not sealed yet: 0 event(s) after the last one)');
  });

  it('every id collision recorded against a run fails it, naming the event id, with or without trusted keys', async () => {
    const runId = 'run-collided';
    const events = await archive(runId);
    const reward = events.find((e) => e.type === 'RewardAssigned')! as RstarEvent<'RewardAssigned'>;
    const step = events.find((e) => e.type === 'StepCompleted')!;
    // The same ids again: one with another reward (same run), one under another run id (a squat across runs).
    const other = signerOf('reward-grading').sign([{ ...reward, data: { ...reward.data, reward: reward.data.reward === 1 ? 0 : 1 } }])[0];
    const squat = signerOf('optimization').sign([{ ...step, runId: 'run-elsewhere' }])[0];
    const appended = await store.appendBatch([other, squat]);
    expect(appended.collisions.map((c) => c.id).sort()).toEqual([reward.id, step.id].sort());
    for (const r of [await checkArchiveIntegrity(store, runId), await checkArchiveIntegrity(store, runId, { trustedKeysFile })]) {
      expect(r.ok).toBe(false);
      expect(r.collisions.map((c) => c.eventId).sort()).toEqual([reward.id, step.id].sort());
      expect(r.problems.filter((p) => p.startsWith('id collision: event '))).toHaveLength(2);
      expect(r.problems.join('\n')).toContain(`id collision: event ${reward.id} was published again with different content`);
      expect(formatIntegrity(r)).toContain(`id collision: event ${step.id}: id_collision: ${step.id} is already archived with different content (stored: run ${runId}, this one run-elsewhere)`);
    }
  });
});
