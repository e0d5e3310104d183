import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { createLogger, startTracing } from '@rstar/telemetry';
import { until } from '@rstar/testing';
import { InProcessBus } from './in-process.bus';

const spans = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor(spans);
const quiet = createLogger('test', { write: () => {} });
const flags = (tp: string | null | undefined) => tp?.slice(-2);
const traceId = (tp: string | null | undefined) => tp?.split('-')[1];

describe('head sampling keeps a trace whole across the bus', () => {
  beforeAll(() => {
    // The standard variables a team sets to sample: half of the traces, decided at their root.
    process.env.OTEL_TRACES_SAMPLER = 'parentbased_traceidratio';
    process.env.OTEL_TRACES_SAMPLER_ARG = '0.5';
    startTracing('sampling-test', { spanProcessors: [processor] });
  });
  afterAll(() => {
    delete process.env.OTEL_TRACES_SAMPLER;
    delete process.env.OTEL_TRACES_SAMPLER_ARG;
  });

  it("an unsampled root still stamps its traceparent (flag 00), so the consumers' spans are dropped with it", async () => {
    const bus = new InProcessBus({ logger: quiet });
    const caused: RstarEvent[] = [];
    await bus.subscribe({
      durable: 'first',
      types: ['RunStarted'],
      handler: async (e) => {
        const child = makeEvent('StepStarted', { runId: e.runId, streamId: `step-${e.runId}`, key: 'k', producer: 't', causedBy: e, data: { step: 0, stage: 's', promptIds: [], policyVersion: 0 } });
        await bus.publish(child);
        caused.push(child);
      },
    });
    const roots = Array.from({ length: 40 }, (_, i) =>
      makeEvent('RunStarted', { runId: `r${i}`, streamId: `run-r${i}`, key: `k${i}`, producer: 't', data: { config: {}, seed: 1, codeVersion: 'x', mode: 'standalone' } }),
    );
    await bus.publish(roots);
    await until(() => caused.length === roots.length || null, 'every root handled');
    await processor.forceFlush();
    const recorded = spans.getFinishedSpans();
    const sampled = roots.filter((r) => flags(r.meta.traceparent) === '01');
    // Every root carries a context, sampled or not; at a ratio of 0.5 both kinds occur (all alike: p = 2^-39).
    for (const r of roots) expect(r.meta.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    expect(sampled.length).toBeGreaterThan(0);
    expect(sampled.length).toBeLessThan(roots.length);
    for (const r of roots) {
      const child = caused.find((c) => c.runId === r.runId)!;
      // The caused event stays in the root's trace with the root's decision.
      expect(traceId(child.meta.traceparent)).toBe(traceId(r.meta.traceparent));
      expect(flags(child.meta.traceparent)).toBe(flags(r.meta.traceparent));
      const consumer = recorded.filter((s) => s.name === 'process RunStarted' && s.spanContext().traceId === traceId(r.meta.traceparent));
      expect(consumer.length).toBe(flags(r.meta.traceparent) === '01' ? 1 : 0);
    }
    await bus.close();
  });
});
