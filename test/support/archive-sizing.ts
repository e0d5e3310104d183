/**
 * Measures what a real distributed run puts on the bus and in the archive, for sizing NATS and Postgres
 * (docs/deploy.md). Runs the six services as processes on a private nats-server and a private database of
 * the local Postgres, the built-in engine on the test SFT checkpoint, submits a short RL run, then reads:
 * events per type (per step, per rollout, per turn), their JSON bytes, the bytes per token of the fields
 * that grow with a rollout's length (token ids, logprobs, loss mask, text), the stream's bytes per message
 * (JetStream's own count, headers included) and the archive's bytes per event on disk (table, TOAST and
 * indexes). Prints a table and, as its last line, one JSON object.
 *
 *   node -r @swc-node/register test/support/archive-sizing.ts [--steps 3] [--prompts 8] [--group 4] [--oversample 2]
 *
 * Needs Postgres and NATS binaries as the e2e tests do (RSTAR_TEST_DATABASE_URL, default the local server).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { ids, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { startBuiltinEngine } from '@rstar/engines';
import { readRunEvents } from '@rstar/step-driver';
import { submitRemoteRun } from '@rstar/training';
import { ensureSftCheckpoint } from './sft-checkpoint';
import { createPrivateDatabase, startPrivateNats } from './service-process';
import { shortRunConfig, startPipeline, stopPipeline, type RunShape } from './distributed-pipeline';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

/** Bytes of each field's JSON per element, over every event of a type that has the field. */
function perElement(events: RstarEvent[], field: string): { elements: number; bytes: number; perElement: number } {
  let elements = 0;
  let bytes = 0;
  for (const e of events) {
    const v = (e.data as Record<string, unknown>)[field];
    if (v === undefined) continue;
    bytes += utf8(JSON.stringify(v));
    elements += Array.isArray(v) ? v.length : 0;
  }
  return { elements, bytes, perElement: elements ? bytes / elements : 0 };
}

async function main(): Promise<void> {
  const shape: RunShape = { steps: arg('steps', 3), prompts: arg('prompts', 8), group: arg('group', 4), oversample: arg('oversample', 2) };
  const pgUrl = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
  const checkpoint = await ensureSftCheckpoint();
  const ckptDir = mkdtempSync(join(tmpdir(), 'rstar-sizing-'));
  const nats = await startPrivateNats();
  const db = await createPrivateDatabase(pgUrl, `sizing_${process.pid}_${Date.now()}`);
  const engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: checkpoint, kvCapacityTokens: 160 * 64 });
  const svcs = await startPipeline({ natsUrl: nats.url, databaseUrl: db.url, engineUrl: engine.url, checkpointDir: ckptDir });
  const store = await EventStore.connect({ connectionString: db.url });
  const bus = await JetStreamBus.connect({ servers: nats.url, name: 'sizing' });
  try {
    const runId = ids.newRun();
    const t0 = Date.now();
    await submitRemoteRun(shortRunConfig('sizing', 7, checkpoint, shape), { bus, runId });
    // Every message of the stream archived (the CLI's own consumer adds nothing to the stream).
    for (;;) {
      const [stored, archived] = [(await bus.jsm.streams.info(bus.stream)).state.messages, await store.count()];
      if (stored === archived) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const seconds = (Date.now() - t0) / 1000;
    const events = await readRunEvents(store, runId);
    const info = await bus.jsm.streams.info(bus.stream);
    const c = new Client({ connectionString: db.url });
    await c.connect();
    await c.query('VACUUM ANALYZE rstar.events');
    const disk = Number((await c.query("SELECT pg_total_relation_size('rstar.events') AS b")).rows[0].b);
    const heap = Number((await c.query("SELECT pg_relation_size('rstar.events') AS b")).rows[0].b);
    await c.end();

    const byType = new Map<string, RstarEvent[]>();
    for (const e of events) byType.set(e.type, [...(byType.get(e.type) ?? []), e]);
    const rollouts = byType.get('RolloutCompleted') ?? [];
    const turns = byType.get('TurnGenerated') ?? [];
    const types = [...byType.entries()].map(([type, list]) => ({
      type, count: list.length, jsonBytes: list.reduce((a, e) => a + utf8(JSON.stringify(e)), 0),
    })).sort((a, b) => b.jsonBytes - a.jsonBytes);
    const totalJson = types.reduce((a, t) => a + t.jsonBytes, 0);
    const responseTokens = rollouts.reduce((a, e) => a + (e.data as { responseTokenIds: number[] }).responseTokenIds.length, 0);
    const promptTokens = rollouts.reduce((a, e) => a + (e.data as { promptTokenIds: number[] }).promptTokenIds.length, 0);
    const modelTokens = turns.reduce((a, e) => a + (e.data as { tokenIds: number[] }).tokenIds.length, 0);
    const fields = {
      turnTokenIds: perElement(turns, 'tokenIds'),
      turnLogprobs: perElement(turns, 'logprobs'),
      rolloutResponseTokenIds: perElement(rollouts, 'responseTokenIds'),
      rolloutPromptTokenIds: perElement(rollouts, 'promptTokenIds'),
      rolloutLogprobs: perElement(rollouts, 'logprobs'),
      rolloutLossMask: perElement(rollouts, 'lossMask'),
    };
    const textBytes = {
      turnText: turns.reduce((a, e) => a + utf8(JSON.stringify((e.data as { text: string }).text)), 0),
      rolloutResponseText: rollouts.reduce((a, e) => a + utf8(JSON.stringify((e.data as { responseText: string }).responseText)), 0),
    };
    const result = {
      bench: 'archive-sizing',
      shape, seconds, runId,
      events: events.length, rollouts: rollouts.length, turns: turns.length,
      toolCalls: (byType.get('ToolCallRequested') ?? []).length,
      promptTokens, responseTokens, modelTokens,
      eventsPerStep: events.length / shape.steps, eventsPerRollout: events.length / rollouts.length, turnsPerRollout: turns.length / rollouts.length,
      jsonBytes: totalJson, jsonBytesPerEvent: totalJson / events.length,
      stream: { messages: info.state.messages, bytes: info.state.bytes, bytesPerMessage: info.state.bytes / info.state.messages },
      postgres: { events: await store.count(), totalBytes: disk, heapBytes: heap, bytesPerEvent: disk / (await store.count()) },
      fields, textBytes, types,
    };
    for (const t of types) console.log(`${t.type.padEnd(20)} ${String(t.count).padStart(6)} events ${String(Math.round(t.jsonBytes / t.count)).padStart(7)} B/event`);
    console.log(JSON.stringify(result));
  } finally {
    await stopPipeline(svcs);
    await store.close();
    await bus.close();
    await engine.close();
    await nats.stop();
    await db.drop();
    rmSync(ckptDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
