import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';
import { ids, parseRunConfig, type EventType, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { readRunEvents } from '@rstar/step-driver';
import { submitRemoteRun } from '@rstar/training';
import { freeLocalPort, until } from '@rstar/testing';
import { createPrivateDatabase, ServiceProcess, startPrivateNats, type PrivateDatabase, type PrivateNats } from '../support/service-process';
import { archiveCaughtUp } from '../support/archive-caught-up';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
// A small SFT checkpoint, trained once by the test support and cached under .rstar/cache (never committed).
let FIXTURE_CKPT = '';
// Two steps, so a kill can land between them (the optimizer, the first weight update) and the restarted
// service must serve step 2; two groups a step keep work in flight at every kill point (16 rollouts a run,
// 32 before: seven runs of this file, for no property more).
const STEPS = 2;
const PROMPTS = 2;
const GROUP = 2;
const OVERSAMPLE = 2;

type Svc = 'control-plane' | 'tool-execution' | 'reward-grading' | 'resampling' | 'optimization' | 'policy-serving';

/**
 * The moment each victim is killed: the first archived event of the given type in the run, i.e. while the
 * service has work in flight or queued (tool calls of step 1, rewards of step 1, groups of step 1, the
 * optimizer between step 1 and step 2, the archiver mid-step, policy-serving with rollouts and their tool
 * calls in flight, and policy-serving right after the first weight update, so the restart must recover
 * the policy version before it can serve step 2's rollouts).
 */
const VICTIMS: Array<{ svc: Svc; after: EventType }> = [
  { svc: 'tool-execution', after: 'ToolCallCompleted' },
  { svc: 'reward-grading', after: 'RewardAssigned' },
  { svc: 'resampling', after: 'GroupResampled' },
  { svc: 'optimization', after: 'StepCompleted' },
  { svc: 'control-plane', after: 'RolloutCompleted' },
  { svc: 'policy-serving', after: 'ToolCallCompleted' },
  { svc: 'policy-serving', after: 'PolicyUpdated' },
];
// A restarted service gets back what the dead process held unacked once its ack wait runs out; the
// services' defaults (30 s) are shortened here so the whole file stays well within its time budget.
const ACK_WAIT_MS = '5000';
// The same for what a killed tool-execution, reward-grading or optimization held (90 s, 30 s and 60 s by
// default). Their live handlers heartbeat, but messages a client pulled and has not started yet do not: 10 s
// leaves those room to wait for a slot on a loaded machine without being delivered twice.
const STAGE_ACK_WAIT_MS = '10000';

// SIGKILL any one service mid-run, restart it, and the run completes with no event
// lost or doubled. Every service is a real child process (its own main.ts) on a private nats-server and a
// private Postgres database, so the services' default stream/subject/schema names cannot touch other tests.
describe('chaos: SIGKILL one service mid-run and restart it', () => {
  const dbName = `chaos_${process.pid}_${Date.now()}`;
  let nats: PrivateNats | undefined;
  let db: PrivateDatabase | undefined;
  let engine: BuiltinEngine | undefined;
  let store: EventStore | undefined;
  // Only to read the stream's message count (what was published, after msg-id dedupe).
  let bus: JetStreamBus | undefined;
  let ckptDir: string;
  const svcs = new Map<Svc, ServiceProcess>();

  beforeAll(async () => {
    FIXTURE_CKPT = await ensureSftCheckpoint();
    ckptDir = mkdtempSync(join(tmpdir(), 'rstar-chaos-'));
    nats = await startPrivateNats();
    db = await createPrivateDatabase(PG_URL, dbName);
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: FIXTURE_CKPT, kvCapacityTokens: 160 * 64 });
    const common = { RSTAR_NATS_URL: nats.url, RSTAR_DATABASE_URL: db.url, RSTAR_LOG_LEVEL: 'warn' };
    const engines = `builtin=${engine.url}`;
    const env: Record<Svc, Record<string, string>> = {
      'control-plane': { RSTAR_ARCHIVER_ACK_WAIT_MS: ACK_WAIT_MS },
      'tool-execution': { RSTAR_SANDBOX_WORKERS: '1', RSTAR_ACK_WAIT_MS: STAGE_ACK_WAIT_MS },
      'reward-grading': { RSTAR_GRADER_SANDBOX_WORKERS: '1', RSTAR_ACK_WAIT_MS: STAGE_ACK_WAIT_MS },
      resampling: {},
      optimization: { RSTAR_ENGINES: engines, RSTAR_CHECKPOINT_DIR: ckptDir, RSTAR_RUNS_ACK_WAIT_MS: STAGE_ACK_WAIT_MS },
      // A fixed instance id: the restart resumes the dead instance's tool-result and policy durables.
      'policy-serving': { RSTAR_ENGINES: engines, RSTAR_COMPACT_PROMPT: '1', RSTAR_INSTANCE_ID: 'chaos-0', RSTAR_ACK_WAIT_MS: ACK_WAIT_MS },
    };
    // The archiver first, so nothing published is missing from the archive we assert on.
    const order: Svc[] = ['control-plane', 'tool-execution', 'reward-grading', 'resampling', 'optimization', 'policy-serving'];
    for (const svc of order) {
      svcs.set(svc, new ServiceProcess({ name: svc, entry: `services/${svc}/src/main.ts`, port: await freeLocalPort(), env: { ...common, ...env[svc] } }));
    }
    await svcs.get('control-plane')!.start();
    await Promise.all(order.slice(1).map((s) => svcs.get(s)!.start()));
    store = await EventStore.connect({ connectionString: db.url });
    bus = await JetStreamBus.connect({ servers: nats.url, name: 'chaos-observer' });
  }, SFT_CHECKPOINT_TIMEOUT_MS + 180_000);

  afterAll(async () => {
    // Every child goes, even when a test failed half-way.
    await Promise.all([...svcs.values()].map((s) => s.stop()));
    await store?.close().catch(() => undefined);
    await bus?.close().catch(() => undefined);
    await engine?.close().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
    await db?.drop().catch(() => undefined);
    if (ckptDir) rmSync(ckptDir, { recursive: true, force: true });
  }, 60_000);

  const config = (seed: number) =>
    parseRunConfig({
      name: `chaos-${seed}`, seed, policy: { model: { layers: 2, dModel: 64, heads: 4, context: 160 }, init: 'checkpoint', checkpoint: FIXTURE_CKPT },
      data: { source: 'tasks', heldOutSize: 4, trainSize: 256 },
      stages: [{ name: 'rl-1', steps: STEPS, promptsPerStep: PROMPTS, groupSize: GROUP, oversample: OVERSAMPLE, maxResponseTokens: 112, maxTurns: 3, lr: 0.0005 }],
      trainer: { warmupSteps: 1 },
    });

  const count = (events: RstarEvent[], type: EventType) => events.filter((e) => e.type === type).length;

  for (const [i, victim] of VICTIMS.entries()) {
    it(`${victim.svc}: killed after the run's first ${victim.after}, restarted; the run completes with every event exactly once`, async () => {
      const runId = ids.newRun();
      const svc = svcs.get(victim.svc)!;
      const startsBefore = svc.starts;
      const submitted = submitRemoteRun(config(100 + i), { natsUrl: nats!.url, runId });
      submitted.catch(() => undefined);

      await until(
        async () => (await readRunEvents(store!, runId, [victim.after, 'RunCompleted', 'RunFailed'])).length > 0,
        `the first ${victim.after} of run ${runId} in the archive`,
        { timeoutMs: 120_000, everyMs: 200 },
      );
      const atKill = await readRunEvents(store!, runId);
      // The kill must land mid-run, or the test proves nothing.
      expect(count(atKill, 'RunCompleted')).toBe(0);
      expect(count(atKill, 'StepCompleted')).toBeLessThan(STEPS);
      await svc.kill();
      await svc.start();

      await submitted;
      const rollouts = STEPS * PROMPTS * GROUP * OVERSAMPLE;
      await until(
        async () => (await readRunEvents(store!, runId, ['RunCompleted'])).length > 0 || undefined,
        `run ${runId}'s RunCompleted archived`,
        { timeoutMs: 60_000, everyMs: 200 },
      );
      // RunCompleted is published last, but an event a killed archiver had fetched and not acked is
      // redelivered only after its ack wait, possibly after RunCompleted was stored: nothing lost or
      // doubled between the bus and the archive means every message the stream stored is archived once.
      const archivedAll = await archiveCaughtUp(store!, bus!);
      expect(archivedAll).toBeGreaterThan(0);
      const events = await readRunEvents(store!, runId);

      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
      expect(count(events, 'RunFailed')).toBe(0);
      expect(count(events, 'RunStarted')).toBe(1);
      const per = (type: EventType, key: (e: RstarEvent) => string) => {
        const m = new Map<string, number>();
        for (const e of events) if (e.type === type) m.set(key(e), (m.get(key(e)) ?? 0) + 1);
        return m;
      };
      const rid = (e: RstarEvent) => (e.data as { rolloutId: string }).rolloutId;
      const gid = (e: RstarEvent) => (e.data as { groupId: string }).groupId;
      const requested = per('RolloutRequested', rid);
      expect(requested.size).toBe(rollouts);
      expect([...requested.values()].every((n) => n === 1)).toBe(true);
      const completed = per('RolloutCompleted', rid);
      const rewarded = per('RewardAssigned', rid);
      for (const r of requested.keys()) {
        expect(completed.get(r), `RolloutCompleted of ${r}`).toBe(1);
        expect(rewarded.get(r), `RewardAssigned of ${r}`).toBe(1);
      }
      expect(completed.size).toBe(rollouts);
      expect(rewarded.size).toBe(rollouts);
      const groups = new Set(events.filter((e) => e.type === 'RolloutRequested').map(gid));
      const resampled = per('GroupResampled', gid);
      expect(groups.size).toBe(STEPS * PROMPTS);
      for (const g of groups) expect(resampled.get(g), `GroupResampled of ${g}`).toBe(1);
      expect(resampled.size).toBe(groups.size);
      const steps = per('StepCompleted', (e) => String((e.data as { step: number }).step));
      expect(steps.size).toBe(STEPS);
      expect([...steps.values()].every((n) => n === 1)).toBe(true);
      expect(count(events, 'RunCompleted')).toBe(1);
      // A redone rollout re-published its turns under the same ids: they must agree with its completion.
      const turnsOf = new Map<string, RstarEvent<'TurnGenerated'>[]>();
      for (const e of events) if (e.type === 'TurnGenerated') turnsOf.set(e.data.rolloutId, [...(turnsOf.get(e.data.rolloutId) ?? []), e]);
      for (const c of events) {
        if (c.type !== 'RolloutCompleted') continue;
        const turns = (turnsOf.get(c.data.rolloutId) ?? []).sort((a, b) => a.data.turn - b.data.turn);
        expect(turns.map((t) => t.data.turn), `turns of ${c.data.rolloutId}`).toEqual(Array.from({ length: c.data.turns }, (_, k) => k));
        let at = 0;
        for (const t of turns) {
          const found = c.data.responseText.indexOf(t.data.text, at);
          expect(found, `TurnGenerated ${t.data.turn} of ${c.data.rolloutId} is part of its RolloutCompleted`).toBeGreaterThanOrEqual(0);
          at = found + t.data.text.length;
        }
      }
      expect(svc.starts).toBe(startsBefore + 1);
    }, 170_000);
  }
});
