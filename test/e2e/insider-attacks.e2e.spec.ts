import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus, securedBusOptionsFromEnv } from '@rstar/messaging';
import { Archiver } from '@rstar/runtime';
import { EventSigner, generateSecrets, securityFromEnv, type GeneratedSecrets, type Principal } from '@rstar/security';
import { createLogger } from '@rstar/telemetry';
import { natsServerMissing, sampleEvent, skipUnlessCi, startNatsServer, until, type NatsServerProcess } from '@rstar/testing';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';

/**
 * Issue 27, build 2, on a secured stack (a nats-server configured from the contracts, each principal with
 * its own credentials and signing key, the control plane's archiver on Postgres): what an insider holding
 * tool-execution's credentials tried no longer works. A `RunCompleted` on tool-execution's subject, an id
 * squatted early, a `PolicyUpdated` with no or a foreign signature: consumers refuse them before any
 * handler, the archiver keeps them out of the run (in the quarantine, with the reason), and the real
 * events go through. The run's chain stays intact with those dead letters.
 */
describe.skipIf(skipUnlessCi(natsServerMissing()))('insider with one service\'s credentials: events bound to subject and producer', () => {
  let dir: string;
  let secrets: GeneratedSecrets;
  let nats: NatsServerProcess;
  let store: EventStore;
  let archiver: Archiver;
  const schema = `ins${process.pid}${Date.now().toString(36)}`;
  const runId = 'run-insider';
  const buses: JetStreamBus[] = [];
  const log = createLogger('insider-test', { write: () => undefined });
  const connectAs = async (p: Principal, extra: Partial<Parameters<typeof JetStreamBus.connect>[0]> = {}) => {
    const bus = await JetStreamBus.connect({ servers: nats.url, name: p, logger: log, publishDeadlineMs: 10_000, ...securedBusOptionsFromEnv(p, { RSTAR_SECRETS_DIR: secrets.principals[p].dir }), ...extra });
    buses.push(bus);
    return bus;
  };
  const signerOf = (p: Principal) => securityFromEnv({ RSTAR_SECRETS_DIR: secrets.principals[p].dir }, p).signer!;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rstar-insider-'));
    secrets = generateSecrets({ outDir: join(dir, 'secrets') });
    nats = await startNatsServer({ config: secrets.natsAuthConfig });
    store = await EventStore.connect({ connectionString: PG_URL, schema });
    archiver = new Archiver(await connectAs('control-plane'), store, { logger: log, maxWaitMs: 5 });
    await archiver.start();
  }, 60_000);
  afterAll(async () => {
    await archiver?.stop();
    for (const b of buses) await b.close().catch(() => undefined);
    await store?.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
    await nats?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('refuses RunCompleted from tool-execution, a squatted id and forged PolicyUpdated; the real events pass; the chain verifies with the dead letters outside it', async () => {
    const operator = await connectAs('cli');
    const seen: RstarEvent[] = [];
    // What `rstar train --remote` follows: the run's progress and end.
    await operator.subscribe({ durable: `cli-${runId}`, types: ['StepCompleted', 'RunCompleted', 'RunFailed'], concurrency: 1, handler: async (e) => void seen.push(e) });
    const tool = await connectAs('tool-execution');
    const optimization = await connectAs('optimization');
    await operator.publish(sampleEvent('RunStarted', { runId, key: runId, producer: 'cli' }));

    // 1. tool-execution, on the one subject it may publish to, a RunCompleted signed with its own key.
    const fakeEnd = signerOf('tool-execution').sign([sampleEvent('RunCompleted', { runId, key: runId, producer: 'optimization' })])[0];
    await tool.publishRaw('rstar.tool.completed', JSON.stringify(fakeEnd), `rstar.tool.completed|${fakeEnd.id}`);
    // 2. The id of step 0's StepCompleted, squatted before optimization publishes it.
    const squat = signerOf('tool-execution').sign([makeEvent('StepCompleted', { runId, streamId: `run-${runId}`, key: `${runId}:0`, producer: 'optimization', data: sampleEvent('StepCompleted', { runId }).data })])[0];
    await tool.publishRaw('rstar.tool.completed', JSON.stringify(squat), `rstar.tool.completed|${squat.id}`);
    // 3. PolicyUpdated with optimization's NATS credentials: unsigned, and signed by a key that is not optimization's.
    const update = (key: string) => sampleEvent('PolicyUpdated', { runId, key, producer: 'optimization', data: { version: 9, checkpointUri: '/evil' } });
    await (await connectAs('optimization', { signer: null })).publish(update('unsigned'));
    await (await connectAs('optimization', { signer: new EventSigner({ keyId: 'optimization', privateKey: generateKeyPairSync('ed25519').privateKey }) })).publish(update('impostor'));
    // 4. An honest type from tool-execution, unsigned: in secured mode every event is signed.
    await (await connectAs('tool-execution', { signer: null })).publish(sampleEvent('ToolCallCompleted', { runId, key: 'unsigned-tool', producer: 'tool-execution' }));

    // The real events: tool-execution's own result, optimization's step 0 (same id as the squat) and the run's end.
    const realStep = makeEvent('StepCompleted', { runId, streamId: `run-${runId}`, key: `${runId}:0`, producer: 'optimization', data: sampleEvent('StepCompleted', { runId }).data });
    expect(realStep.id).toBe(squat.id);
    await tool.publish(sampleEvent('ToolCallCompleted', { runId, key: 'honest-tool', producer: 'tool-execution' }));
    await optimization.publish(realStep);
    await optimization.publish(sampleEvent('RunCompleted', { runId, key: runId, producer: 'optimization' }));

    await until(async () => (await store.readRunSnapshot(runId)).some((e) => e.type === 'RunCompleted'), 'the real RunCompleted archived', { timeoutMs: 60_000 });
    await until(async () => (await store.quarantined(runId)).length >= 5 && seen.some((e) => e.type === 'RunCompleted'), 'the five refusals in the quarantine', { timeoutMs: 60_000 });

    // The CLI saw the real step and the real end only, each signed by optimization.
    expect(seen.map((e) => `${e.type} ${e.meta.signature?.keyId}`)).toEqual(['StepCompleted optimization', 'RunCompleted optimization']);
    // The archive holds the genuine events only, each signed by its producer.
    const archived = await store.readRunSnapshot(runId);
    expect(archived.map((e) => `${e.type}:${e.meta.signature?.keyId}`).sort()).toEqual(
      ['RunCompleted:optimization', 'RunStarted:cli', 'StepCompleted:optimization', 'ToolCallCompleted:tool-execution'],
    );
    expect(archived.some((e) => e.type === 'PolicyUpdated' || e.type === 'DeadLettered')).toBe(false);
    // The archiver's own refusals, with the reasons (consumers dead-letter too, each under its own name).
    const refused = (await store.quarantined(runId)).filter((q) => q.consumer === 'archiver').map((q) => q.reason);
    expect(refused.some((r) => /^subject_mismatch: RunCompleted RunCompleted:run-insider arrived on rstar\.tool\.completed, but RunCompleted is published on rstar\.run\.completed only/.test(r)), refused.join('\n')).toBe(true);
    expect(refused.some((r) => /^subject_mismatch: StepCompleted StepCompleted:run-insider:0 arrived on rstar\.tool\.completed/.test(r))).toBe(true);
    expect(refused.some((r) => /^unsigned_event: PolicyUpdated PolicyUpdated:unsigned/.test(r))).toBe(true);
    expect(refused.some((r) => /^bad_signature: PolicyUpdated PolicyUpdated:impostor/.test(r))).toBe(true);
    expect(refused.some((r) => /^unsigned_event: ToolCallCompleted ToolCallCompleted:unsigned-tool/.test(r))).toBe(true);
    expect((await store.quarantined(runId)).some((q) => q.consumer === `cli-${runId}` && /^subject_mismatch: RunCompleted/.test(q.reason))).toBe(true);
    // An honest run with dead letters: its chain is intact (they live outside it).
    expect(await store.verifyChain(runId)).toMatchObject({ ok: true, firstBreak: null, unchained: 0 });
  }, 180_000);

  it('inside the 2 minute duplicate window, an id squatted with other content reaches the archiver as an id collision; an identical re-publish is still deduplicated', async () => {
    const windowRun = `${runId}-window`;
    const tool = await connectAs('tool-execution');
    const admin = await connectAs('control-plane');
    const messages = async () => (await admin.jsm.streams.info(admin.stream)).state.messages;
    const real = sampleEvent('ToolCallCompleted', { runId: windowRun, key: 'in-window', producer: 'tool-execution' });
    const squat = { ...structuredClone(real), data: { ...real.data, stdout: 'squatted early' } } as RstarEvent;
    const before = await messages();
    // Same subject, same id, seconds apart: NATS deduplicated the second by Msg-Id and nobody knew.
    await tool.publish(structuredClone(squat));
    await tool.publish(structuredClone(real));
    expect(await messages()).toBe(before + 2);
    await until(async () => (await store.quarantined(windowRun)).some((q) => q.kind === 'id_collision' && q.eventId === real.id), 'the id collision in the quarantine', { timeoutMs: 60_000 });
    const alarm = (await store.quarantined(windowRun)).find((q) => q.kind === 'id_collision' && q.eventId === real.id)!;
    expect(alarm.reason).toMatch(/^id_collision: ToolCallCompleted:in-window (is already archived|appears twice in one batch) with different content/);
    // The early copy holds the id, flagged; the later one is kept with the alarm, nothing is lost silently.
    expect(JSON.parse(alarm.payload).data).toEqual(real.data);
    expect((await store.readRunSnapshot(windowRun)).find((e) => e.id === real.id)?.data).toEqual(squat.data);
    // A resumed producer publishing the same event again (new trace context and signature): one message, no alarm.
    await tool.publish(structuredClone(squat));
    expect(await messages()).toBe(before + 2);
    expect((await store.quarantined(windowRun)).filter((q) => q.eventId === real.id)).toHaveLength(1);
  }, 120_000);

  it('an id already archived with different content is an alarm in the quarantine, not a silent drop; an honest copy is a plain duplicate', async () => {
    const first = sampleEvent('ToolCallCompleted', { runId, key: 'collide', producer: 'tool-execution' });
    const other = { ...first, data: { ...first.data, stdout: 'something else' } } as RstarEvent;
    expect(await store.appendBatch([first])).toMatchObject({ appended: 1, duplicates: 0 });
    expect(await store.appendBatch([first])).toMatchObject({ appended: 0, duplicates: 1, collisions: [] });
    const r = await store.appendBatch([other]);
    expect(r).toMatchObject({ appended: 0, duplicates: 0 });
    expect(r.collisions).toEqual([{ id: first.id, reason: expect.stringMatching(/^id_collision: ToolCallCompleted:collide is already archived with different content \(stored: other data\)/) }]);
    expect((await store.quarantined(runId)).filter((q) => q.kind === 'id_collision').map((q) => q.eventId)).toEqual([first.id]);
    expect((await store.readRunSnapshot(runId)).find((e) => e.id === first.id)?.data).toEqual(first.data);
  }, 60_000);
});
