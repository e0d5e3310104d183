import { Counter, Gauge, Histogram, collectDefaultMetrics, register } from 'prom-client';

/**
 * The process-wide Prometheus registry every rstar component registers on: prom-client's default
 * registry, which the services' `/metrics` route (@willsoto/nestjs-prometheus) serves.
 */
export const metricsRegistry = register;
let defaultsCollected = false;

/** Add Node's default process metrics (CPU, memory, event loop) once per process. */
export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ register: metricsRegistry, prefix: 'rstar_' });
}

// Get-or-create: several instances of a component in one process (standalone mode, tests) share a metric.
function getOr<T>(name: string, make: () => T): T {
  return (metricsRegistry.getSingleMetric(name) as T | undefined) ?? make();
}

/** A counter on {@link metricsRegistry}; returns the existing one when `name` is already registered. */
export function counter(name: string, help: string, labelNames: readonly string[] = []): Counter<string> {
  return getOr(name, () => new Counter({ name, help, labelNames, registers: [metricsRegistry] }));
}

/** A gauge on {@link metricsRegistry}; returns the existing one when `name` is already registered. */
export function gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge<string> {
  return getOr(name, () => new Gauge({ name, help, labelNames, registers: [metricsRegistry] }));
}

/** A histogram (seconds by default buckets) on {@link metricsRegistry}; get-or-create by `name`. */
export function histogram(
  name: string,
  help: string,
  labelNames: readonly string[] = [],
  buckets?: number[],
): Histogram<string> {
  return getOr(name, () => new Histogram({ name, help, labelNames, buckets, registers: [metricsRegistry] }));
}
