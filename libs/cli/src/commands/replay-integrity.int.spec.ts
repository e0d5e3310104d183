import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { createRegrader } from '@rstar/replay';
import { generateSyntheticRun } from '@rstar/testing';
import { EventSigner, generateSecrets, producersOf, securityFromEnv, type GeneratedSecrets } from '@rstar/security';

/** `rstar replay verify` as a user runs it on a Postgres archive: the hash chain and the producers' signatures. */
const ROOT = resolve(__dirname, '../../../..');
const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const schema = `rv${process.pid}${Date.now().toString(36)}`;
const runId = 'run-integrity';
const dir = mkdtempSync(join(tmpdir(), 'rstar-verify-cli-'));

function rstar(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(join(ROOT, 'node_modules/.bin/tsx'), ['libs/cli/src/main.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 180_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function superuser(sql: string): Promise<void> {
  const c = new Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

describe('rstar replay verify: tamper evidence of the archive', () => {
  let secrets: GeneratedSecrets;
  let events: RstarEvent[];
  const verify = (...extra: string[]) => rstar(['replay', 'verify', runId, '--database', PG_URL, '--schema', schema, '--no-exec', ...extra]);

  beforeAll(async () => {
    secrets = generateSecrets({ outDir: join(dir, 'secrets') });
    const generated = await generateSyntheticRun({ grade: createRegrader(), runId, seed: 3, steps: 2, promptsPerStep: 2, samples: 4, keep: 2, mode: 'weighted', responseChars: 40 });
    // Each event signed by the principal that produces its type, as the services would on a secured bus.
    const signers = new Map<string, EventSigner>();
    events = generated.map((e) => {
      const p = producersOf(e.type)[0];
      if (!signers.has(p)) signers.set(p, securityFromEnv({ RSTAR_SECRETS_DIR: secrets.principals[p].dir }, p).signer!);
      return signers.get(p)!.sign([e])[0];
    });
    const store = await EventStore.connect({ connectionString: PG_URL, schema });
    for (let i = 0; i < events.length; i += 50) await store.appendBatch(events.slice(i, i + 50));
    // As the control plane's archiver does when the run's end is archived: a sealed, signed checkpoint.
    await store.checkpoints.write(runId, true, securityFromEnv({ RSTAR_SECRETS_DIR: secrets.principals['control-plane'].dir }, 'control-plane').signer);
    await store.close();
  });
  afterAll(async () => {
    await superuser(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_read" CASCADE`);
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports an intact chain and valid signatures, and exits 0', () => {
    const r = verify('--trusted-keys', join(secrets.outDir, 'trusted-keys.json'));
    expect(r.stdout, r.stderr).toMatch(new RegExp(`hash chain: ok \\(${events.length} events in \\d+ streams checked\\)`));
    expect(r.stdout).toContain(`signatures: ${events.length} valid, 0 unsigned`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it('names the event a superuser edited behind the trigger, and exits 1', async () => {
    const victim = events.find((e) => e.type === 'RewardAssigned')!;
    await superuser(
      `BEGIN; SET LOCAL rstar.migrating = 'on'; UPDATE "${schema}".events SET data = jsonb_set(data, '{extracted}', '"999"') WHERE id = '${victim.id}'; COMMIT;`,
    );
    const r = verify('--trusted-keys', join(secrets.outDir, 'trusted-keys.json'));
    expect(r.stdout).toContain(`hash chain: BROKEN — chain broken at event ${victim.id} (RewardAssigned, stream ${victim.streamId}`);
    expect(r.stdout).toMatch(new RegExp(`signatures: 1 INVALID — first: ${victim.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: bad_signature`));
    expect(r.code).toBe(1);
    const json = verify('--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).integrity.chain.firstBreak).toMatchObject({ eventId: victim.id, kind: 'hash_mismatch' });
  });
});
