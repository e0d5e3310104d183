import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ExecRequest, ExecResult, SandboxPool } from '@rstar/sandbox';

/**
 * Prometheus metrics of one tool-execution instance (own registry, so several instances can live in
 * one process, e.g. in tests): latency histogram and status counts per call, queue depth, busy
 * workers and active sessions sampled at scrape time.
 */
export class ToolExecutionMetrics {
  readonly registry = new Registry();
  private readonly latency: Histogram<string>;
  private readonly statuses: Counter<string>;

  constructor(pool: SandboxPool) {
    this.latency = new Histogram({
      name: 'rstar_tool_exec_latency_seconds',
      help: 'Tool call latency from admission to result (queueing included), by status',
      labelNames: ['status'],
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
      registers: [this.registry],
    });
    this.statuses = new Counter({
      name: 'rstar_tool_exec_total',
      help: 'Tool calls by status',
      labelNames: ['status'],
      registers: [this.registry],
    });
    new Gauge({
      name: 'rstar_tool_exec_queue_depth',
      help: 'Requests waiting for a sandbox worker',
      registers: [this.registry],
      collect() {
        this.set(pool.queueDepth);
      },
    });
    new Gauge({
      name: 'rstar_tool_exec_active_sessions',
      help: 'Stateful sessions alive (not idle past expiry)',
      registers: [this.registry],
      collect() {
        this.set(pool.activeSessions());
      },
    });
    new Gauge({
      name: 'rstar_tool_exec_workers_busy',
      help: 'Sandbox workers running a call',
      registers: [this.registry],
      collect() {
        this.set(pool.health().workers.busy);
      },
    });
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
