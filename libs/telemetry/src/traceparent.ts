import { randomBytes } from 'node:crypto';

/** A parsed W3C trace context (`traceparent` header, https://www.w3.org/TR/trace-context/). */
export interface TraceContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Parse a `traceparent` header; returns null for absent or malformed values (never throws). */
export function parseTraceparent(header: string | null | undefined): TraceContext | null {
  const m = header ? RE.exec(header.trim()) : null;
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return null;
  return { traceId: m[1], spanId: m[2], sampled: (parseInt(m[3], 16) & 1) === 1 };
}

/** Format a trace context as a `traceparent` header value. */
export function formatTraceparent(ctx: TraceContext): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.sampled ? '01' : '00'}`;
}

/** A child span of `parent` (same trace, new span id), or a new sampled root trace when `parent` is null. */
export function childTraceparent(parent?: string | null): string {
  const p = parseTraceparent(parent);
  return formatTraceparent({
    traceId: p?.traceId ?? randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    sampled: p?.sampled ?? true,
  });
}
