import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStore } from '@rstar/event-store';
import { groupTable, indexRun, readHistory, runSummary, stepRolloutVersions, stepTable } from '@rstar/replay';

/** `rstar projections rebuild|status` and `rstar replay show` on a real archive, as a user runs them (real processes). */
const ROOT = resolve(__dirname, '../../../..');
const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const schema = `cli${process.pid}${Date.now().toString(36)}`;
const golden = readHistory(join(ROOT, 'test/fixtures/golden-run/events.jsonl'));
const RUN = 'golden-run-1';

function rstar(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(join(ROOT, 'node_modules/.bin/tsx'), ['libs/cli/src/main.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 180_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('rstar projections / replay show over the read models', () => {
  beforeAll(async () => {
    const store = await EventStore.connect({ connectionString: PG_URL, schema });
    await store.appendBatch(golden);
    await store.close();
  });
  afterAll(async () => {
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  it('replay show reads the summary, steps and groups from the read models, equal to the in-memory projections', () => {
    const ix = indexRun(golden, RUN);
    const r = rstar(['replay', 'show', RUN, '--database', PG_URL, '--schema', schema, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ summary: runSummary(ix), steps: stepTable(ix), timeouts: groupTable(ix, { dropped: 'timeout' }) });
    const g = rstar(['replay', 'show', RUN, '--database', PG_URL, '--schema', schema, '--step', '1', '--json']);
    expect(g.code, g.stderr).toBe(0);
    expect(JSON.parse(g.stdout).groups).toEqual(groupTable(ix, { step: 1 }));
    // Each rollout's policy versions, read from the archive as the dashboard's step page reads them.
    expect(JSON.parse(g.stdout).versions).toEqual(Object.fromEntries(stepRolloutVersions(ix, 1)));
    const bad = rstar(['replay', 'show', RUN, '--database', PG_URL, '--schema', schema, '--step', '99']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('step 99 is not in run golden-run-1; known: 0, 1');
  }, 240_000);

  it('projections rebuild applies every archived event again from position 0; status reports no lag', () => {
    const r = rstar(['projections', 'rebuild', '--database', PG_URL, '--schema', schema, '--batch', '100']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^rebuilt the read models from ${golden.length} events in `));
    const s = rstar(['projections', 'status', '--database', PG_URL, '--schema', schema, '--json']);
    expect(s.code, s.stderr).toBe(0);
    expect(JSON.parse(s.stdout)).toMatchObject({ events: golden.length, lag: 0, runs: 1 });
    const missing = rstar(['projections', 'rebuild']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('pass --database URL');
  }, 240_000);
});
