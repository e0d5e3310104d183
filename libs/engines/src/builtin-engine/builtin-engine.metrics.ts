import { Counter, Gauge, Registry } from 'prom-client';
import type { SchedulerStats } from './generation.scheduler';

/**
 * Prometheus metrics of the built-in engine under the names SGLang and vLLM use (so the same dashboards
 * and the vLLM adapter's capacity probe `vllm:cache_config_info` work), plus `rstar_engine_*` names.
 * One registry per server: several engines can live in one process (tests, standalone mode).
 */
export function createEngineMetrics(stats: () => SchedulerStats): Registry {
  const reg = new Registry();
  const gauge = (name: string, help: string, pick: (s: SchedulerStats) => number) =>
    new Gauge({ name, help, registers: [reg], collect() { this.set(pick(stats())); } });
  gauge('sglang:num_running_reqs', 'Requests in the running batch', (s) => s.running);
  gauge('sglang:num_queue_reqs', 'Requests waiting for a batch', (s) => s.queued);
  gauge('sglang:num_used_tokens', 'KV-cache tokens reserved by running requests', (s) => s.kvTokensInUse);
  gauge('sglang:token_usage', 'Fraction of the KV cache in use', (s) => s.kvTokensInUse / s.kvCapacityTokens);
  gauge('sglang:max_total_num_tokens', 'KV-cache capacity in tokens', (s) => s.kvCapacityTokens);
  gauge('vllm:num_requests_running', 'Requests in the running batch', (s) => s.running);
  gauge('vllm:num_requests_waiting', 'Requests waiting for a batch', (s) => s.queued);
  gauge('rstar_engine_running_requests', 'Requests in the running batch', (s) => s.running);
  gauge('rstar_engine_queued_requests', 'Requests waiting for a batch', (s) => s.queued);
  gauge('rstar_engine_kv_tokens_in_use', 'KV-cache tokens reserved by running requests', (s) => s.kvTokensInUse);
  gauge('rstar_engine_kv_capacity_tokens', 'KV-cache capacity in tokens', (s) => s.kvCapacityTokens);
  new Counter({ name: 'rstar_engine_generated_tokens_total', help: 'Tokens generated', registers: [reg], collect() { this.reset(); this.inc(stats().generatedTokens); } });
  new Counter({ name: 'rstar_engine_batches_total', help: 'Batched generations run', registers: [reg], collect() { this.reset(); this.inc(stats().batches); } });
  // vLLM exposes its cache geometry as an info metric; the KV capacity is num_gpu_blocks * block_size.
  new Gauge({
    name: 'vllm:cache_config_info', help: 'KV cache geometry (block_size 1 token)', registers: [reg], labelNames: ['block_size', 'num_gpu_blocks'],
    collect() { this.reset(); this.labels('1', String(stats().kvCapacityTokens)).set(1); },
  });
  return reg;
}
