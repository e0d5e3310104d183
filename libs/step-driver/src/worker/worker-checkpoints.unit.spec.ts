import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '@rstar/contracts';
import { workerCheckpoints } from './worker.trainer';

const stage = (name: string, steps: number) => ({ name, steps, promptsPerStep: 2, groupSize: 4, maxResponseTokens: 64, lr: 0.001 });
const hf = { policy: { kind: 'hf' }, trainer: { kind: 'worker' }, engines: [{ kind: 'sglang', url: 'http://e:30000' }] };

describe('workerCheckpoints: the checkpoint policy sent with each worker step', () => {
  it('is absent without config.checkpoints (the worker keeps every version in full)', () => {
    expect(workerCheckpoints(parseRunConfig({ ...hf, stages: [stage('a', 3)] }), 0)).toBeUndefined();
  });

  it('carries every/keepLast/exportEvery with defaults, and marks the run\'s last step (over all stages) final', () => {
    const config = parseRunConfig({ ...hf, stages: [stage('a', 3), stage('b', 2)], checkpoints: { keepLast: 2, every: 5 } });
    expect(workerCheckpoints(config, 0)).toEqual({ every: 5, keepLast: 2, exportEvery: null, final: false });
    expect(workerCheckpoints(config, 3)?.final).toBe(false);
    expect(workerCheckpoints(config, 4)).toEqual({ every: 5, keepLast: 2, exportEvery: null, final: true });
    const keepAll = parseRunConfig({ ...hf, stages: [stage('a', 1)], checkpoints: { exportEvery: 10 } });
    expect(workerCheckpoints(keepAll, 0)).toEqual({ every: 1, keepLast: null, exportEvery: 10, final: true });
  });
});
