import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Pool } from 'pg';
import type { RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { parseJsonl, readHistory, writeHistory, type VerifyReport } from '@rstar/replay';
import { until } from '@rstar/testing';

/**
 * `rstar replay` end to end against the real archive: the golden history appended to a fresh schema
 * of the real Postgres, then `show`, `verify` (exit code 0 / 1) and `rerun` (JSON lines and real NATS
 * JetStream) run as the CLI a user runs.
 */
const ROOT = resolve(__dirname, '../..');
const DB_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const RUN = 'golden-run-1';
const events = readHistory(join(__dirname, '../fixtures/golden-run/events.jsonl'));
const tag = `replay_${process.pid}_${Date.now().toString(36)}`;
const schema = tag;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'libs/cli/src/main.ts'), 'replay', ...args], { cwd: ROOT, maxBuffer: 64 << 20, env: { ...process.env, RSTAR_DATABASE_URL: '', RSTAR_NATS_URL: '' } }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('rstar replay against the real archive', { timeout: 240_000 }, () => {
  let store: EventStore;
  let dir: string;
  beforeAll(async () => {
    store = await EventStore.connect({ connectionString: DB_URL, schema });
    await store.appendBatch(events);
    dir = mkdtempSync(join(tmpdir(), 'replay-e2e-'));
  });
  afterAll(async () => {
    await store?.close();
    const pool = new Pool({ connectionString: DB_URL });
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => pool.end());
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('verify reads the run from Postgres and exits 0 with no deterministic difference', async () => {
    const r = await cli(['verify', RUN, '--database', DB_URL, '--schema', schema, '--no-exec', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as VerifyReport;
    expect(report).toMatchObject({ runId: RUN, ok: true, deterministicDifferences: 0 });
    expect(report.checked).toMatchObject({ rewards: 24, groups: 6, batches: 2 });
  });

  it('show prints the step table and a rollout transcript with its tool call and reward rule', async () => {
    const r = await cli(['show', RUN, '--database', DB_URL, '--schema', schema]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`run ${RUN}  status=completed`);
    const rollout = events.find((e): e is RstarEvent<'ToolCallCompleted'> => e.type === 'ToolCallCompleted')!.data.rolloutId;
    const t = await cli(['show', RUN, '--database', DB_URL, '--schema', schema, '--rollout', rollout]);
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toContain(`=== ${rollout}`);
    expect(t.stdout).toMatch(/\[tool call:.*\] python_code_with_standard_io -> (ok|runtime_error)/);
    expect(t.stdout).toMatch(/reward [01] \((correct|wrong)\) {2}rule \w+/);
  });

  it('verify exits 1 and names the event and field when the recorded history disagrees with today', async () => {
    const tampered = JSON.parse(JSON.stringify(events)) as RstarEvent[];
    const reward = tampered.find((e): e is RstarEvent<'RewardAssigned'> => e.type === 'RewardAssigned' && e.data.reward === 1)!;
    reward.data.rule = 'renamed_rule';
    const file = join(dir, 'tampered.jsonl');
    writeHistory(file, tampered);
    const r = await cli(['verify', RUN, '--history', file, '--no-exec']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`DIFF [reward_rule/grader_changed] ${reward.id}.rule`);
    expect(r.stdout).toContain('FAILED: 1 deterministic differences');
  });

  it('rerun writes the step inputs under a new run id, and publishes them to real JetStream', async () => {
    const out = join(dir, 'rerun.jsonl');
    const w = await cli(['rerun', RUN, '--history', join(__dirname, '../fixtures/golden-run/events.jsonl'), '--step', '1', '--run-id', `${tag}-a`, '--out', out]);
    expect(w.code, w.stderr).toBe(0);
    const written = parseJsonl(readFileSync(out, 'utf8'));
    expect(written.map((e) => e.type)).toEqual(['RunStarted', 'StepStarted', ...Array(12).fill('RolloutRequested')]);

    const bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag });
    try {
      const seen: RstarEvent[] = [];
      const sub = await bus.subscribe({ durable: 'watch', types: ['RunStarted', 'RolloutRequested'], handler: async (e) => void seen.push(e) });
      const p = await cli(['rerun', RUN, '--database', DB_URL, '--schema', schema, '--nats', NATS_URL, '--stream', tag.toUpperCase(), '--subject-prefix', tag, '--step', '1', '--run-id', `${tag}-b`]);
      expect(p.code, p.stderr).toBe(0);
      await until(() => seen.length >= 13, 'the rerun\'s RunStarted and 12 RolloutRequested');
      await sub.drain();
      expect(seen.filter((e) => e.type === 'RolloutRequested')).toHaveLength(12);
      const started = seen.find((e): e is RstarEvent<'RunStarted'> => e.type === 'RunStarted')!;
      expect(started.runId).toBe(`${tag}-b`);
      expect(started.data.rerunOf).toEqual({ runId: RUN, step: 1 });
    } finally {
      await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
      await bus.close();
    }
  });
});
