import { describe, expect, it } from 'vitest';
import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { createLogger } from '@rstar/telemetry';
import { InProcessBus } from './in-process.bus';
import { ALL_EVENT_TYPES } from './subjects';
import { PermanentError, TransientError } from './bus.port';
import { until } from '@rstar/testing';

const quiet = createLogger('test', { write: () => {} });
const lines: string[] = [];
const capture = createLogger('test', { write: (l) => lines.push(l) });

function ev(i: number, runId = 'r1'): RstarEvent {
  return makeEvent('RunFailed', { runId, streamId: `run-${runId}`, key: `${runId}:${i}`, producer: 'test', data: { error: `e${i}` } });
}


describe('InProcessBus', () => {
  it('delivers each event once per durable, dedupes ids, and shares work between same-name subscribers', async () => {
    const bus = new InProcessBus({ logger: quiet });
    const seen: string[] = [];
    const h = async (e: RstarEvent) => void seen.push(e.id);
    await bus.subscribe({ durable: 'a', types: ['RunFailed'], handler: h, concurrency: 4 });
    await bus.subscribe({ durable: 'a', types: ['RunFailed'], handler: h, concurrency: 4 });
    const events = Array.from({ length: 200 }, (_, i) => ev(i));
    await bus.publish(events);
    await bus.publish(events.slice(0, 50)); // duplicates
    await until(() => seen.length >= 200, '200 deliveries');
    const sub = await bus.subscribe({ durable: 'probe', types: ['RunFailed'], handler: h });
    await until(async () => (await sub.lag()) === 0, 'probe idle');
    expect(new Set(seen).size).toBe(200);
    expect(seen.length).toBe(200);
    expect(bus.published).toBe(200);
    await bus.close();
  });

  it('a copy with other content under a taken id is not deduplicated (it goes on, to the archive\'s collision alarm); an identical copy is', async () => {
    const bus = new InProcessBus({ logger: quiet });
    const seen: string[] = [];
    await bus.subscribe({ durable: 'a', types: ['RunFailed'], handler: async (e) => void seen.push(e.type === 'RunFailed' ? e.data.error : '') });
    const first = ev(1);
    await bus.publish(first);
    await bus.publish({ ...ev(1), data: { error: 'squatted' } } as RstarEvent);
    await bus.publish(ev(1)); // an honest re-publish: new meta, same content
    await until(() => seen.length >= 2, 'two deliveries');
    expect(bus.published).toBe(2);
    expect(seen).toEqual(['e1', 'squatted']);
    await bus.close();
  });

  it('a new durable starts at new messages; a re-subscribed durable resumes where it stopped', async () => {
    const bus = new InProcessBus({ logger: quiet });
    await bus.publish([ev(1), ev(2)]);
    const got: string[] = [];
    const sub = await bus.subscribe({ durable: 'late', types: ['RunFailed'], handler: async (e) => void got.push(e.id) });
    await bus.publish([ev(3)]);
    await until(() => got.length === 1, 'one delivery');
    expect(got).toEqual([ev(3).id]);
    await sub.drain();
    await bus.publish([ev(4), ev(5)]);
    const sub2 = await bus.subscribe({ durable: 'late', types: ['RunFailed'], handler: async (e) => void got.push(e.id) });
    await until(() => got.length === 3, 'resumed deliveries');
    expect(got).toEqual([ev(3).id, ev(4).id, ev(5).id]);
    await until(async () => (await sub2.lag()) === 0, 'lag 0');
    const all: string[] = [];
    await bus.subscribe({ durable: 'all', from: 'all', types: ['RunFailed'], handler: async (e) => void all.push(e.id) });
    await until(() => all.length === 5, 'history replay');
    await bus.close();
  });

  it('bounds concurrency, retries transient errors with backoff, dead-letters permanent ones', async () => {
    const bus = new InProcessBus({ logger: quiet });
    let inflight = 0;
    let maxInflight = 0;
    const attempts = new Map<string, number>();
    await bus.subscribe({
      durable: 'w',
      types: ['RunFailed'],
      concurrency: 3,
      backoff: { initialMs: 1, maxMs: 5 },
      handler: async (e) => {
        inflight++;
        maxInflight = Math.max(maxInflight, inflight);
        await new Promise((r) => setImmediate(r));
        inflight--;
        const n = (attempts.get(e.id) ?? 0) + 1;
        attempts.set(e.id, n);
        if (e.data.error === 'e0' && n < 3) throw new TransientError('flaky');
        if (e.data.error === 'e1') throw new PermanentError('never', 'data.error');
      },
    });
    const dead: RstarEvent[] = [];
    await bus.subscribe({ durable: 'dlq', types: ['DeadLettered'], handler: async (e) => void dead.push(e) });
    await bus.publish(Array.from({ length: 20 }, (_, i) => ev(i)));
    await until(() => attempts.size === 20 && (attempts.get(ev(0).id) ?? 0) >= 3 && dead.length === 1, 'retries and dlq');
    expect(maxInflight).toBeLessThanOrEqual(3);
    expect(attempts.get(ev(0).id)).toBe(3);
    expect(attempts.get(ev(1).id)).toBe(1);
    expect(dead[0].type === 'DeadLettered' && dead[0].data.field).toBe('data.error');
    await bus.close();
  });

  it('dead-letters malformed and unknown payloads with a log line naming the field, and gives up after maxDeliver', async () => {
    lines.length = 0;
    const bus = new InProcessBus({ logger: capture });
    const ok: string[] = [];
    await bus.subscribe({ durable: 'arch', allSubjects: true, types: ALL_EVENT_TYPES, handler: async (e) => void ok.push(e.type) });
    let tries = 0;
    await bus.subscribe({
      durable: 'always-fails',
      types: ['RunCompleted'],
      maxDeliver: 3,
      backoff: { initialMs: 1, maxMs: 2 },
      handler: async () => {
        tries++;
        throw new Error('boom');
      },
    });
    const bad = { ...ev(1), data: { error: 42 } };
    await bus.publishRaw('rstar.run.failed', JSON.stringify(bad), 'bad-1');
    await bus.publishRaw('rstar.mystery', JSON.stringify({ ...ev(2), type: 'Mystery' }), 'bad-2');
    await bus.publishRaw('rstar.run.failed', 'not json{', 'bad-3');
    await bus.publish(makeEvent('RunCompleted', { runId: 'r1', streamId: 'run-r1', key: 'r1', producer: 't', data: { steps: 1, summary: {} } }));
    await bus.publish(ev(3));
    await until(() => ok.filter((t) => t === 'DeadLettered').length === 4 && ok.includes('RunFailed'), 'dead letters archived');
    expect(tries).toBe(3);
    expect(lines.some((l) => l.includes('"field":"RunFailed.data.error"'))).toBe(true);
    expect(lines.some((l) => l.includes('"field":"type"') && l.includes('Mystery'))).toBe(true);
    await bus.close();
  });
});
