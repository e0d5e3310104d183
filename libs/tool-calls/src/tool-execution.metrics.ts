import { Gauge, type Counter, type Histogram } from 'prom-client';
import type { ExecRequest, ExecResult, SandboxPool } from '@rstar/sandbox';
import { counter, histogram, metricsRegistry } from '@rstar/telemetry';

/** The pools whose state the gauges sum at scrape time (one per tool-execution instance in the process). */
const pools = new Set<SandboxPool>();
const sum = (f: (p: SandboxPool) => number) => [...pools].reduce((a, p) => a + f(p), 0);

function poolGauge(name: string, help: string, f: (p: SandboxPool) => number): void {
  if (metricsRegistry.getSingleMetric(name)) return;
  new Gauge({
    name,
    help,
    registers: [metricsRegistry],
    collect() {
      this.set(sum(f));
    },
  });
}

/**
 * Prometheus metrics of tool-execution on the process registry: latency histogram and status counts per
 * call, and queue depth, busy workers and active sessions summed over the process' pools at scrape time.
 * Several instances in one process (standalone mode, tests) share the metrics.
 */
export class ToolExecutionMetrics {
  private readonly latency: Histogram<string>;
  private readonly statuses: Counter<string>;

  constructor(pool: SandboxPool) {
    pools.add(pool);
    this.latency = histogram(
      'rstar_tool_exec_latency_seconds',
      'Tool call latency from admission to result (queueing included), by status',
      ['status'],
      [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
    );
    this.statuses = counter('rstar_tool_exec_total', 'Tool calls by status', ['status']);
    poolGauge('rstar_tool_exec_queue_depth', 'Requests waiting for a sandbox worker', (p) => p.queueDepth);
    poolGauge('rstar_tool_exec_active_sessions', 'Stateful sessions alive (not idle past expiry)', (p) => p.activeSessions());
    poolGauge('rstar_tool_exec_workers_busy', 'Sandbox workers running a call', (p) => p.health().workers.busy);
  }

  /** Stop sampling `pool` (it is closing). */
  static forget(pool: SandboxPool): void {
    pools.delete(pool);
  }

  /** Record one finished call. */
  observe(result: ExecResult, startedAt: number): void {
    this.latency.observe({ status: result.status }, (Date.now() - startedAt) / 1000);
    this.statuses.inc({ status: result.status });
  }
}

/** `pool.execute` with metrics recorded. */
export async function executeMeasured(pool: SandboxPool, metrics: ToolExecutionMetrics, req: ExecRequest): Promise<ExecResult> {
  const t = Date.now();
  const r = await pool.execute(req);
  metrics.observe(r, t);
  return r;
}
