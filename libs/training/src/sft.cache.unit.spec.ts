import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '@rstar/contracts';
import { pruneCheckpoints } from './checkpoint.pruner';
import { restoreSft, sftCacheKey, sftCodeVersion, storeSft } from './sft.cache';

const tmp = mkdtempSync(join(tmpdir(), 'rstar-sft-cache-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const base = { name: 'x', stages: [{ name: 'rl', steps: 2, promptsPerStep: 2, maxResponseTokens: 64, lr: 1e-3 }] };

describe('SFT checkpoint cache', () => {
  it('keys by every SFT setting, the seed and the code version, not by RL settings', () => {
    const k = sftCacheKey(parseRunConfig(base), 'v1');
    expect(sftCacheKey(parseRunConfig({ ...base, stages: [{ ...base.stages[0], lr: 5e-4, steps: 9 }], roc: { enabled: false } }), 'v1')).toBe(k);
    expect(sftCacheKey(parseRunConfig({ ...base, seed: 2 }), 'v1')).not.toBe(k);
    expect(sftCacheKey(parseRunConfig({ ...base, sft: { steps: 301 } }), 'v1')).not.toBe(k);
    expect(sftCacheKey(parseRunConfig({ ...base, policy: { model: { layers: 3 } } }), 'v1')).not.toBe(k);
    expect(sftCacheKey(parseRunConfig(base), 'v2')).not.toBe(k);
  });

  it('the code version hashes the SFT code, or is RSTAR_CODE_VERSION', () => {
    const v = sftCodeVersion();
    expect(v).toMatch(/^[0-9a-f]{16}$/);
    expect(sftCodeVersion()).toBe(v);
    expect(sftCodeVersion(tmp)).toBeNull();
  });

  it('stores a checkpoint once and restores a copy of it', () => {
    const src = join(tmp, 'run1', 'sft');
    mkdirSync(src, { recursive: true });
    writeFileSync(join(src, 'weights.bin'), 'w1');
    const cache = join(tmp, 'cache');
    const entry = { key: 'k1', codeVersion: 'v1', steps: 10, trainSeconds: 3, finalLoss: 0.5, createdAt: '2026-01-01T00:00:00.000Z' };
    expect(restoreSft('k1', join(tmp, 'run2', 'sft'), cache)).toBeNull();
    storeSft(entry, src, cache);
    writeFileSync(join(src, 'weights.bin'), 'changed later');
    storeSft({ ...entry, finalLoss: 9 }, src, cache); // already stored: kept as it was
    expect(restoreSft('k1', join(tmp, 'run2', 'sft'), cache)).toEqual(entry);
    expect(readFileSync(join(tmp, 'run2', 'sft', 'weights.bin'), 'utf8')).toBe('w1');
  });
});

describe('pruneCheckpoints', () => {
  it('keeps the N newest step checkpoints by step number and never the SFT one', () => {
    const dir = join(tmp, 'ckpt');
    for (const d of ['sft', 'step-0', 'step-1', 'step-2', 'step-10', 'other']) mkdirSync(join(dir, d), { recursive: true });
    const removed = pruneCheckpoints(dir, 2).map((p) => p.slice(dir.length + 1)).sort();
    expect(removed).toEqual(['step-0', 'step-1']);
    expect(pruneCheckpoints(dir, 2)).toEqual([]);
  });
});
