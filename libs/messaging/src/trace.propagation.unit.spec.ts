import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { createLogger, inSpan, startTracing, traceparentOf } from '@rstar/telemetry';
import { until } from '@rstar/testing';
import { InProcessBus } from './in-process.bus';

const spans = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor(spans);
const finished = async () => (await processor.forceFlush(), spans.getFinishedSpans());
const quiet = createLogger('test', { write: () => {} });
const ev = (type: 'RunStarted' | 'StepStarted', key: string, causedBy?: RstarEvent): RstarEvent =>
  type === 'RunStarted'
    ? makeEvent('RunStarted', { runId: 'r', streamId: 'run-r', key, producer: 't', data: { config: {}, seed: 1, codeVersion: 'x', mode: 'standalone' } })
    : makeEvent('StepStarted', { runId: 'r', streamId: 'step-r', key, producer: 't', causedBy, data: { step: 0, stage: 's', promptIds: [], policyVersion: 0 } });

describe('trace context across the bus (W3C traceparent in meta and headers)', () => {
  beforeAll(() => void startTracing('messaging-test', { spanProcessors: [processor] }));

  it('publish inside a span stamps it; the handler runs in a child consumer span; what it publishes is a child of that', async () => {
    const bus = new InProcessBus({ logger: quiet });
    const seen: RstarEvent[] = [];
    await bus.subscribe({
      durable: 'first',
      types: ['RunStarted'],
      handler: async (e) => {
        seen.push(e);
        await bus.publish(ev('StepStarted', 'k', e));
      },
    });
    await bus.subscribe({ durable: 'second', types: ['StepStarted'], handler: async (e) => void seen.push(e) });
    const root = ev('RunStarted', 'k');
    const rootTp = await inSpan('submit', {}, async () => {
      await bus.publish(root);
      return traceparentOf()!;
    });
    expect(root.meta.traceparent).toBe(rootTp);
    await until(() => seen.length === 2 || null, 'both deliveries');
    const all = await until(async () => {
      const f = await finished();
      return f.filter((s) => s.name.startsWith('process ')).length === 2 ? f : null;
    }, 'two consumer spans');
    const first = all.find((s) => s.name === 'process RunStarted')!;
    const second = all.find((s) => s.name === 'process StepStarted')!;
    const submit = all.find((s) => s.name === 'submit')!;
    // One trace: submit -> process RunStarted -> process StepStarted.
    expect(first.spanContext().traceId).toBe(submit.spanContext().traceId);
    expect(first.parentSpanContext?.spanId).toBe(submit.spanContext().spanId);
    expect(second.parentSpanContext?.spanId).toBe(first.spanContext().spanId);
    expect(second.spanContext().traceId).toBe(submit.spanContext().traceId);
    expect(seen[1].meta.traceparent).toContain(first.spanContext().spanId);
    expect(first.attributes).toMatchObject({ 'messaging.consumer.group.name': 'first', 'rstar.event.type': 'RunStarted', 'rstar.run.id': 'r' });
    await bus.close();
  });

  it('outside any span an event keeps the parent it names, or gets a producer span of its own', async () => {
    const bus = new InProcessBus({ logger: quiet });
    const named = ev('RunStarted', 'named');
    named.meta.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const bare = ev('RunStarted', 'bare');
    await bus.publish([named, bare]);
    expect(named.meta.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(bare.meta.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const publishSpan = (await finished()).find((s) => s.name === 'publish RunStarted')!;
    expect(bare.meta.traceparent).toContain(publishSpan.spanContext().spanId);
    await bus.close();
  });

  it('a failing handler marks its consumer span as an error', async () => {
    const bus = new InProcessBus({ logger: quiet });
    let calls = 0;
    await bus.subscribe({ durable: 'fails', types: ['RunStarted'], maxDeliver: 1, handler: async () => { calls++; throw new Error('handler broke'); } });
    await bus.publish(ev('RunStarted', 'fail'));
    await until(() => calls === 1 || null, 'one delivery');
    const s = await until(async () => (await finished()).find((x) => x.name === 'process RunStarted' && x.status.code === 2), 'the failed span');
    expect(s.status.message).toBe('handler broke');
    await bus.close();
  });
});
