import { describe, expect, it } from 'vitest';
import { parseEngineLoad } from './engine-load';

describe('parseEngineLoad', () => {
  it('reads SGLang\'s KV tokens in use, capacity, retraction counter and queue (labelled or not)', () => {
    const text = [
      '# TYPE sglang:num_used_tokens gauge',
      'sglang:num_used_tokens{model_name="m"} 812',
      'sglang:max_total_num_tokens 1200',
      'sglang:num_retracted_reqs 0',
      'sglang:num_retracted_requests_total{model_name="m"} 7',
      'sglang:num_queue_reqs 3',
      'sglang:num_running_reqs 5',
    ].join('\n');
    expect(parseEngineLoad(text)).toEqual({ kvUsedTokens: 812, kvCapacityTokens: 1200, retractions: 7, queuedRequests: 3, runningRequests: 5 });
  });

  it('reads vLLM\'s KV usage share times its capacity and the preemption counter', () => {
    const text = [
      'vllm:cache_config_info{block_size="16",num_gpu_blocks="100"} 1',
      'vllm:kv_cache_usage_perc{model_name="m"} 0.25',
      'vllm:num_preemptions_total{model_name="m"} 2',
      'vllm:num_requests_waiting 1',
    ].join('\n');
    expect(parseEngineLoad(text)).toEqual({ kvUsedTokens: 400, kvCapacityTokens: 1600, retractions: 2, queuedRequests: 1, runningRequests: 0 });
  });

  it('is null for an engine that reports no KV usage or no retraction counter (the built-in engine)', () => {
    expect(parseEngineLoad('sglang:num_running_reqs 0\nrstar_engine_kv_tokens_in_use 0\n')).toBeNull();
    // A name that only starts like another is not it.
    expect(parseEngineLoad('sglang:num_used_tokens_x 5\nsglang:num_retracted_requests_total 1\n')).toBeNull();
  });
});
