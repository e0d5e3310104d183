import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  contextFromTraceparent, counter, createLogger, inSpan, metricsRegistry, recording, SpanKind, spanContextFromTraceparent, startTracing, traceparentOf,
} from './index';

const spans = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor(spans);
/** Spans finished so far (the processor exports once the resource's async attributes are known). */
const finished = async () => (await processor.forceFlush(), spans.getFinishedSpans());

describe('telemetry', () => {
  beforeAll(() => {
    startTracing('telemetry-test', { spanProcessors: [processor] });
  });

  it('logs one JSON object per line with component, level filter, child fields and flattened errors', () => {
    const lines: string[] = [];
    const log = createLogger('comp', { level: 'info', write: (l) => lines.push(l) }).child({ consumer: 'c1' });
    log.debug('hidden');
    log.warn('boom', { err: Object.assign(new Error('bad'), { code: 'x_code' }) });
    expect(lines).toHaveLength(1);
    const rec = JSON.parse(lines[0]);
    expect(rec).toMatchObject({ level: 'warn', component: 'comp', consumer: 'c1', msg: 'boom', err: { name: 'Error', message: 'bad', code: 'x_code' } });
    expect(rec.traceId).toBeUndefined();
  });

  it('a log line written inside a span carries its trace and span ids', async () => {
    const lines: string[] = [];
    const log = createLogger('comp', { write: (l) => lines.push(l) });
    const ids = await inSpan('work', {}, async (span) => {
      log.info('inside');
      return span.spanContext();
    });
    expect(JSON.parse(lines[0])).toMatchObject({ traceId: ids.traceId, spanId: ids.spanId });
  });

  it('continues a trace from a traceparent: the child span has the parent named by the header', async () => {
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    let inner: string | null = null;
    await inSpan('consume', { parent, kind: SpanKind.CONSUMER }, async () => {
      expect(recording()).toBe(true);
      inner = traceparentOf();
    });
    const s = (await finished()).find((x) => x.name === 'consume')!;
    expect(s.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(s.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(inner).toBe(`00-0af7651916cd43dd8448eb211c80319c-${s.spanContext().spanId}-01`);
  });

  it('records a thrown error on the span and rethrows it; root spans start a new trace', async () => {
    await expect(inSpan('fails', {}, async () => Promise.reject(new Error('nope')))).rejects.toThrow('nope');
    const failed = (await finished()).find((x) => x.name === 'fails')!;
    expect(failed.status).toMatchObject({ code: 2, message: 'nope' });
    await inSpan('outer', {}, async () => {
      await inSpan('own-trace', { root: true }, async () => undefined);
    });
    const outer = (await finished()).find((x) => x.name === 'outer')!;
    const own = (await finished()).find((x) => x.name === 'own-trace')!;
    expect(own.spanContext().traceId).not.toBe(outer.spanContext().traceId);
  });

  it('rejects malformed or absent traceparents without throwing', () => {
    expect(traceparentOf(contextFromTraceparent('garbage'))).toBeNull();
    expect(spanContextFromTraceparent('00-00000000000000000000000000000000-b7ad6b7169203331-01')).toBeNull();
    expect(spanContextFromTraceparent(null)).toBeNull();
    expect(spanContextFromTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')?.spanId).toBe('b7ad6b7169203331');
  });

  it('get-or-creates metrics on the shared registry', async () => {
    const a = counter('rstar_test_total', 'test', ['k']);
    const b = counter('rstar_test_total', 'test', ['k']);
    expect(a).toBe(b);
    a.inc({ k: 'v' }, 2);
    expect(await metricsRegistry.metrics()).toContain('rstar_test_total{k="v"} 2');
  });
});
