import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupTimeoutReason, type EventType, type RstarEvent } from '@rstar/contracts';
import { pickPrompts } from '@rstar/step-driver';
import { verifyRun } from '@rstar/replay';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { rebuildStepBatch } from '@rstar/training';
import type { RunSummary } from '@rstar/step-driver';
import { REFILL_SCENARIO, runRefillScenario } from '../support/refill-scenario';
import { REPO_ROOT } from '../support/service-process';

/**
 * Dynamic sampling and group timeouts over real NATS JetStream and a real Postgres archive: the real step
 * driver and resampler, with scripted rollout answers (test/support/refill-scenario.ts); then the log is
 * checked, `replay verify` re-derives the refills and the timeout, and the real `rstar replay show` CLI
 * prints the timeout's reason from the archive's read models.
 */
const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const tag = `dyn${process.pid}${Date.now().toString(36)}`;
const RUN = `refill-${tag}`;

function rstar(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(join(REPO_ROOT, 'node_modules/.bin/tsx'), ['libs/cli/src/main.ts', ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 180_000, env: { ...process.env, RSTAR_LOG_LEVEL: 'warn' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('dynamic sampling and group timeouts over JetStream + Postgres', () => {
  let rt: Runtime;
  let summary: RunSummary;
  let events: RstarEvent[];
  const of = <T extends EventType>(type: T) => events.filter((e) => e.type === type) as unknown as RstarEvent<T>[];

  beforeAll(async () => {
    rt = await connectRuntime({ natsUrl: NATS_URL, databaseUrl: PG_URL, schema: tag, stream: tag.toUpperCase(), subjectPrefix: tag, archive: true });
    summary = await runRefillScenario(rt.bus, RUN);
    await rt.flush();
    events = await rt.store.readRunSnapshot(RUN);
  }, 180_000);

  afterAll(async () => {
    await rt?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`);
    await c.end();
    const { JetStreamBus } = await import('@rstar/messaging');
    const bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag }).catch(() => null);
    if (bus) {
      await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
      await bus.close();
    }
  }, 120_000);

  it('refills all-equal groups from the next seeded prompts up to the kept count, bounded by maxExtraGroups', () => {
    const groupsOf = (step: number) => [...new Set(of('RolloutRequested').filter((e) => e.data.step === step).map((e) => e.data.promptIdx))].sort();
    expect(groupsOf(0)).toEqual([0, 1, 2, 3]);
    expect(groupsOf(1)).toEqual([0, 1, 2, 3, 4]);
    expect(groupsOf(2)).toEqual([0, 1, 2]);
    const m = summary.history.map((h) => h.metrics);
    // Step 0: one all-equal group replaced, 3 kept as configured; step 1: cap 2 reached with 1 kept; step 2: the timed-out group is not replaced.
    expect(m.map((x) => [x.extraGroups, x.extraGroupsCap, x.keptGroups])).toEqual([[1, 2, 3], [2, 2, 1], [0, 2, 2]]);
    const archived = of('StepCompleted').sort((a, b) => a.data.step - b.data.step).map((e) => e.data.metrics.extraGroups);
    expect(archived).toEqual([1, 2, 0]);
    // The extra groups' prompts continue the step's seeded prompt order.
    for (const step of [0, 1]) {
      const order = pickPrompts({ runSeed: REFILL_SCENARIO.seed, step, poolSize: 40, count: 5 }).map((i) => `task-${i}`);
      const byIdx = new Map(of('RolloutRequested').filter((e) => e.data.step === step).map((e) => [e.data.promptIdx, e.data.promptId]));
      expect([...byIdx.keys()].sort().map((i) => byIdx.get(i))).toEqual(order.slice(0, byIdx.size));
    }
    // Every event id once (the bus and the archive drop re-emitted copies).
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    // The batch rebuilt from the log alone (extra groups in prompt order) is the one each step trained on.
    for (const o of of('StepOptimized')) expect(rebuildStepBatch(events, o.data.step).hash).toBe(o.data.batchHash);
  });

  it('records the slow group as a timeout event with its reason, which replay verify re-derives', async () => {
    const timedOut = of('GroupResampled').filter((e) => e.data.groupDropped === 'timeout');
    expect(timedOut.map((e) => e.data.groupId)).toEqual([`group:${RUN}:2:2`]);
    const t = timedOut[0].data.timeout!;
    expect(timedOut[0].meta.producer).toBe('resampling');
    expect(t).toMatchObject({ budgetS: 3, unseen: 0, missing: [{ rolloutId: `rollout:${RUN}:2:2:1`, waitingFor: 'completion' }] });
    expect(t.waitedS).toBeGreaterThanOrEqual(3);
    expect(t.reason).toBe(groupTimeoutReason({ ...t, expected: 4, received: 3 }));
    expect(t.reason).toContain('1 without RolloutCompleted [1]');

    const report = await verifyRun(events, { runId: RUN });
    expect(report.differences.filter((d) => d.deterministic).map((d) => d.message)).toEqual([]);
    expect(report.checked.groups).toBe(4 + 5 + 3);
    // A changed reason, or an extra group too many, is a deterministic difference naming the event and field.
    const tampered = JSON.parse(JSON.stringify(events)) as RstarEvent[];
    const tg = tampered.find((e): e is RstarEvent<'GroupResampled'> => e.id === timedOut[0].id)!;
    tg.data.timeout!.reason = 'slow';
    const sc = tampered.find((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted' && e.data.step === 0)!;
    sc.data.metrics.extraGroupsCap = 0;
    const bad = await verifyRun(tampered, { runId: RUN });
    expect(bad.differences.map((d) => `${d.kind} ${d.eventId}#${d.field}`)).toEqual(expect.arrayContaining([
      `group_timeout ${tg.id}#timeout.reason`, `group_refill ${sc.id}#extraGroups`,
    ]));
    expect(bad.ok).toBe(false);
  });

  it('rstar replay show prints the timed-out group and its reason from the archive', () => {
    const r = rstar(['replay', 'show', RUN, '--database', PG_URL, '--schema', tag]);
    expect(r.code, r.stderr).toBe(0);
    const reason = of('GroupResampled').find((e) => e.data.groupDropped === 'timeout')!.data.timeout!.reason;
    expect(r.stdout).toContain('timed-out groups (1):');
    expect(r.stdout).toContain(`step 2  group:${RUN}:2:2: ${reason}`);
    const step = rstar(['replay', 'show', RUN, '--database', PG_URL, '--schema', tag, '--step', '2']);
    expect(step.code, step.stderr).toBe(0);
    expect(step.stdout).toContain(`DROPPED (timeout)`);
    expect(step.stdout).toContain(`timeout: ${reason}`);
  }, 240_000);
});
