import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { createLogger } from '@rstar/telemetry';
import { JetStreamBus } from './jetstream.bus';
import { TransientError } from './bus.port';
import { until } from '@rstar/testing';

const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const tag = `js${process.pid}${Date.now().toString(36)}`;
const lines: string[] = [];
const log = createLogger('test', { write: (l) => lines.push(l) });

function ev(i: number, traceparent: string | null = null): RstarEvent {
  return makeEvent('RunFailed', { runId: 'r', streamId: 'run-r', key: `r:${i}`, producer: 'test', data: { error: `e${i}` }, traceparent });
}


describe('JetStreamBus (real NATS)', () => {
  let bus: JetStreamBus;
  beforeAll(async () => {
    bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag, logger: log });
  });
  afterAll(async () => {
    if (!bus) return;
    await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
    await bus.close();
  });

  it('dedupes by Nats-Msg-Id, delivers once per durable with bounded concurrency, carries traceparent', async () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const seen = new Map<string, number>();
    let inflight = 0;
    let peak = 0;
    const sub = await bus.subscribe({
      durable: 'work',
      types: ['RunFailed'],
      concurrency: 4,
      handler: async (e) => {
        inflight++;
        peak = Math.max(peak, inflight);
        await new Promise((r) => setTimeout(r, 1));
        inflight--;
        seen.set(e.id, (seen.get(e.id) ?? 0) + 1);
        expect(e.meta.traceparent).toBe(tp);
      },
    });
    const events = Array.from({ length: 300 }, (_, i) => ev(i, tp));
    await bus.publish(events);
    await bus.publish(events.slice(0, 100));
    await until(() => seen.size === 300, '300 distinct deliveries');
    await until(async () => (await sub.lag()) === 0, 'lag 0');
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(peak).toBeLessThanOrEqual(4);
    const info = await bus.jsm.streams.info(bus.stream);
    expect(info.state.messages).toBe(300);
    await sub.drain();
  });

  it('naks transient failures for redelivery, dead-letters invalid payloads naming the field', async () => {
    let attempts = 0;
    const dead: RstarEvent[] = [];
    await bus.subscribe({ durable: 'dlq', types: ['DeadLettered'], handler: async (e) => void dead.push(e) });
    const sub = await bus.subscribe({
      durable: 'flaky',
      types: ['RunCompleted', 'RunFailed'],
      backoff: { initialMs: 10, maxMs: 50 },
      handler: async (e) => {
        if (e.type === 'RunCompleted' && ++attempts < 3) throw new TransientError('not yet');
      },
    });
    await bus.publish(makeEvent('RunCompleted', { runId: 'r', streamId: 'run-r', key: 'done', producer: 't', data: { steps: 1, summary: {} } }));
    await bus.publishRaw('rstar.run.failed', JSON.stringify({ ...ev(999), data: { error: 7 } }), 'bad-1');
    await until(() => attempts >= 3 && dead.length >= 1, 'retries and a dead letter');
    await until(async () => (await sub.lag()) === 0, 'flaky lag 0');
    expect(attempts).toBe(3);
    const d = dead[0];
    expect(d.type === 'DeadLettered' && d.data.field).toBe('RunFailed.data.error');
    expect(lines.some((l) => l.includes('dead-lettered') && l.includes('RunFailed.data.error'))).toBe(true);
  });

  it('hands batch subscribers whole batches, acks after the handler, redelivers a failed batch, dead-letters invalid payloads', async () => {
    const dead: RstarEvent[] = [];
    await bus.subscribe({ durable: 'dlq2', types: ['DeadLettered'], from: 'new', handler: async (e) => void dead.push(e) });
    const sizes: number[] = [];
    const seen = new Map<string, number>();
    let failOnce = true;
    const sub = await bus.subscribeBatches({
      durable: 'batches',
      from: 'all',
      maxBatch: 64,
      maxWaitMs: 5,
      backoff: { initialMs: 10, maxMs: 50 },
      handler: async (events) => {
        sizes.push(events.length);
        if (failOnce && events.some((e) => e.id === ev(1050).id)) {
          failOnce = false;
          throw new TransientError('database down');
        }
        for (const e of events) seen.set(e.id, (seen.get(e.id) ?? 0) + 1);
      },
    });
    const events = Array.from({ length: 500 }, (_, i) => ev(1000 + i));
    await bus.publishRaw('rstar.run.failed', JSON.stringify({ ...ev(1999), data: { error: 7 } }), 'bad-batch-1');
    await bus.publish(events);
    const ids = new Set(events.map((e) => e.id));
    await until(() => [...ids].every((id) => seen.has(id)), 'all 500 handled');
    await until(async () => (await sub.lag()) === 0, 'batch lag 0');
    expect(failOnce).toBe(false);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(64);
    expect(sizes.length).toBeLessThan(500);
    await until(() => dead.some((d) => d.type === 'DeadLettered' && d.data.consumer === 'batches'), 'the batch consumer dead letter');
    const d = dead.find((x) => x.type === 'DeadLettered' && x.data.consumer === 'batches')!;
    expect(d.type === 'DeadLettered' && d.data.field).toBe('RunFailed.data.error');
    await sub.drain();
  });
});

