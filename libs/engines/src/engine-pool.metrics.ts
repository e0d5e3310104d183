import { Gauge } from 'prom-client';
import { metricsRegistry } from '@rstar/telemetry';
import type { RolloutScheduler } from './scheduler/rollout.scheduler';

/** The schedulers sampled at scrape time (one per engine pool alive in the process). */
const schedulers = new Set<RolloutScheduler>();

function poolGauge(name: string, help: string, labelNames: string[], collect: (g: Gauge<string>) => void): void {
  if (metricsRegistry.getSingleMetric(name)) return;
  new Gauge({
    name, help, labelNames, registers: [metricsRegistry],
    collect() {
      this.reset();
      collect(this);
    },
  });
}

/**
 * Prometheus view of policy-serving's KV-budget scheduling (docs/design/protocol.md §7), read from every live pool's
 * scheduler at scrape time: per engine the KV tokens reserved and the capacity (their ratio is the KV
 * usage the scheduler plans with), rollouts holding a lease, generation requests in flight and whether
 * the engine is in rotation; and the rollouts waiting for capacity (the queue depth).
 */
export function registerPoolMetrics(scheduler: RolloutScheduler): void {
  schedulers.add(scheduler);
  const perEngine = (name: string, help: string, pick: (e: ReturnType<RolloutScheduler['snapshot']>[number]) => number) =>
    poolGauge(name, help, ['engine'], (g) => {
      for (const s of schedulers) for (const e of s.snapshot()) g.inc({ engine: e.id }, pick(e));
    });
  perEngine('rstar_scheduler_kv_reserved_tokens', 'KV-cache tokens reserved by the rollouts leased to the engine', (e) => e.reserved);
  perEngine('rstar_scheduler_kv_capacity_tokens', 'KV-cache capacity of the engine in tokens (its server info)', (e) => e.capacity);
  perEngine('rstar_scheduler_leases', 'Rollouts holding a lease on the engine', (e) => e.leases);
  perEngine('rstar_scheduler_requests_in_flight', 'Generation requests in flight on the engine', (e) => e.outstanding);
  perEngine('rstar_scheduler_engine_up', '1 while the engine is in rotation', (e) => (e.up ? 1 : 0));
  poolGauge('rstar_scheduler_waiting_rollouts', 'Rollouts waiting for KV capacity on any engine (queue depth)', [], (g) => {
    let n = 0;
    for (const s of schedulers) n += s.waiting().length;
    g.set(n);
  });
}

/** Stop sampling `scheduler` (its pool closed). */
export function forgetPoolMetrics(scheduler: RolloutScheduler): void {
  schedulers.delete(scheduler);
}
