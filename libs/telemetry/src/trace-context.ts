import {
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

export { SpanKind, SpanStatusCode, type Attributes, type Context, type Link, type Span };

/**
 * The propagator of rstar's wire contract: W3C trace context (`traceparent`), whatever `OTEL_PROPAGATORS`
 * says for HTTP. Events carry it in NATS headers and in `meta.traceparent`.
 */
const w3c = new W3CTraceContextPropagator();

/** The tracer every rstar span comes from (a no-op until {@link startTracing} registers the SDK). */
export function rstarTracer(): Tracer {
  return trace.getTracer('rstar');
}

/** The W3C `traceparent` of the span active in `ctx` (default: now), or null when there is none. */
export function traceparentOf(ctx: Context = context.active()): string | null {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return null;
  const carrier: Record<string, string> = {};
  w3c.inject(ctx, carrier, defaultTextMapSetter);
  return carrier.traceparent ?? null;
}

/**
 * The W3C `traceparent` of `span`, or null when it has no valid context (tracing is off). A span the
 * sampler dropped still has one, with the sampled flag 0: carried on the event, it makes every consumer's
 * parent-based sampler drop the rest of that trace too, so head sampling (`OTEL_TRACES_SAMPLER=
 * parentbased_traceidratio`) keeps or drops a rollout's trace whole instead of starting fresh traces.
 */
export function traceparentOfSpan(span: Span): string | null {
  return traceparentOf(trace.setSpan(ROOT_CONTEXT, span));
}

/**
 * The context whose parent span is the one `traceparent` names (W3C format), on top of `base`; `base`
 * unchanged when the header is absent or malformed (never throws).
 */
export function contextFromTraceparent(traceparent: string | null | undefined, base: Context = ROOT_CONTEXT): Context {
  if (!traceparent) return base;
  return w3c.extract(base, { traceparent }, defaultTextMapGetter);
}

/** The span context a `traceparent` names (for span links), or null when absent or malformed. */
export function spanContextFromTraceparent(traceparent: string | null | undefined): SpanContext | null {
  const sc = trace.getSpanContext(contextFromTraceparent(traceparent));
  return sc && isSpanContextValid(sc) ? sc : null;
}

/** True while a span that records (a real SDK, sampled) is active: lets hot paths skip span work. */
export function recording(): boolean {
  return trace.getActiveSpan()?.isRecording() ?? false;
}

/** Options of {@link inSpan}. */
export interface InSpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Parent: a W3C `traceparent` (a message's), a context, or (default) the active context. */
  parent?: string | null | Context;
  /** Start a new trace, ignoring the active span (a rollout's own trace). */
  root?: boolean;
  links?: Link[];
}

/**
 * Run `fn` inside a new active span named `name`: its awaits, the events it publishes and the spans it
 * starts are children of it. A throw is recorded on the span (status ERROR, exception event) and
 * rethrown; the span ends when `fn` settles.
 */
export async function inSpan<T>(name: string, opts: InSpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = startSpan(name, opts);
  try {
    return await withActiveSpan(span, () => fn(span));
  } catch (e) {
    failSpan(span, e);
    throw e;
  } finally {
    span.end();
  }
}

/** Run `fn` with `span` active (an existing span: its events are published as its children). */
export function withActiveSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Run `fn` with no span active (events it publishes keep the `traceparent` they were given). */
export function withoutActiveSpan<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}

/** Start a span that is not made active (its end is the caller's); see {@link InSpanOptions}. */
export function startSpan(name: string, opts: InSpanOptions = {}): Span {
  const parent =
    opts.parent === undefined ? context.active() : typeof opts.parent === 'string' || opts.parent === null ? contextFromTraceparent(opts.parent) : opts.parent;
  return rstarTracer().startSpan(name, { kind: opts.kind, attributes: opts.attributes, links: opts.links, root: opts.root }, parent);
}

/** Span links to the spans the given `traceparent`s name (malformed and absent ones skipped, at most `max`). */
export function linksTo(traceparents: Iterable<string | null | undefined>, max = 128): Link[] {
  const out: Link[] = [];
  for (const tp of traceparents) {
    if (out.length >= max) break;
    const sc = spanContextFromTraceparent(tp);
    if (sc) out.push({ context: sc });
  }
  return out;
}

/** Record `err` on `span`: an exception event and status ERROR with its message. */
export function failSpan(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** The `{traceId, spanId}` of the active span, for log lines; empty when no span is active. */
export function activeTraceIds(): { traceId?: string; spanId?: string } {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? { traceId: sc.traceId, spanId: sc.spanId } : {};
}
