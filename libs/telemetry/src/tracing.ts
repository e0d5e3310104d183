import { trace } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** What {@link startTracing} started: flush and stop it before the process exits. */
export interface TracingHandle {
  /** True when the SDK runs (false when `OTEL_SDK_DISABLED=true`). */
  readonly enabled: boolean;
  /** Export the spans ended so far, keeping the SDK running (never throws). */
  flush(): Promise<void>;
  /** Export the spans still buffered and stop the SDK (idempotent; never throws). */
  shutdown(): Promise<void>;
}

/** Options of {@link startTracing}; production code passes only the service name. */
export interface TracingOptions {
  /**
   * Span processors to use instead of the exporter the `OTEL_*` variables describe (tests and benchmarks
   * hand in an in-memory exporter).
   */
  spanProcessors?: SpanProcessor[];
}

let started: TracingHandle | null = null;

/** The instrumentations rstar's services use (`OTEL_NODE_ENABLED_INSTRUMENTATIONS` overrides the list). */
export const DEFAULT_INSTRUMENTATIONS = 'http,express,nestjs-core,pg,undici';

/** Paths of the probes and the scrape route: polled every few seconds, they would bury the real traces. */
const QUIET_PATHS = /^\/(health|metrics)(\/|$|\?)/;

/**
 * Start OpenTelemetry in this process (once; later calls return the first handle): the Node SDK with the
 * instrumentations of http (server and client), express, NestJS, pg and undici (`fetch`), W3C trace
 * context propagation, and the exporter, sampler and resource the standard `OTEL_*` variables describe
 * (default: OTLP over http/protobuf to `http://localhost:4318`, parent-based always-on sampling).
 * `serviceName` is `service.name` unless `OTEL_SERVICE_NAME` is set. `OTEL_SDK_DISABLED=true` turns it
 * off. Metrics stay on Prometheus (`/metrics`) and logs on stdout, so the SDK's own metric and log
 * exporters are off unless `OTEL_METRICS_EXPORTER` / `OTEL_LOGS_EXPORTER` ask for them.
 *
 * Call it before anything loads `http`, `express` or `pg` (a service's `main.ts` imports its
 * `tracing.ts` first): the instrumentations patch a module when it is first required. Spans of pg and
 * undici are made only inside another span, and the health and metrics routes are not traced.
 */
export function startTracing(serviceName: string, opts: TracingOptions = {}): TracingHandle {
  if (started) return started;
  // Disabled means nothing loaded and nothing patched: the SDK would still wrap http, express and Nest
  // (measured: ~0.5 ms of a tool-execution request's CPU on the 2-core dev host) only to make no spans.
  if (process.env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') {
    started = { enabled: false, flush: async () => undefined, shutdown: async () => undefined };
    return started;
  }
  // Loaded here, not at import: the SDK and its instrumentations are large and most importers never start it.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { getNodeAutoInstrumentations } = require('@opentelemetry/auto-instrumentations-node') as typeof import('@opentelemetry/auto-instrumentations-node');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const env = process.env;
  // The standard variable of the Node auto-instrumentations picks which run; ours by default.
  env.OTEL_NODE_ENABLED_INSTRUMENTATIONS ||= DEFAULT_INSTRUMENTATIONS;
  const config = {
    '@opentelemetry/instrumentation-http': {
      ignoreIncomingRequestHook: (req: { url?: string }) => QUIET_PATHS.test(req.url ?? ''),
      // Outgoing calls outside any span (probes of engines, the exporter's own requests) are not traces of ours.
      requireParentforOutgoingSpans: true,
    },
    '@opentelemetry/instrumentation-pg': { requireParentSpan: true },
    '@opentelemetry/instrumentation-undici': { requireParentforSpans: true },
  };
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName }),
    instrumentations: [getNodeAutoInstrumentations(config)],
    ...(opts.spanProcessors ? { spanProcessors: opts.spanProcessors } : {}),
    ...(env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
  });
  sdk.start();
  let stopping: Promise<void> | null = null;
  started = {
    enabled: true,
    flush: async () => {
      // The global provider is a proxy; its delegate is the SDK's provider, which can flush.
      const provider = (trace.getTracerProvider() as { getDelegate?: () => unknown }).getDelegate?.() as { forceFlush?: () => Promise<void> } | undefined;
      await provider?.forceFlush?.().catch(() => undefined);
    },
    shutdown: () => (stopping ??= sdk.shutdown().catch(() => undefined)),
  };
  return started;
}

/** The handle of the running SDK, or null before {@link startTracing}. */
export function tracingHandle(): TracingHandle | null {
  return started;
}

