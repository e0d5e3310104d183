import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelTokenizer } from '@rstar/agent';
import { submitInWaves, type WaveArrival } from '@rstar/testing';
import { ensureTinyModel, startReferenceEngine, workersPythonForTests, type PythonProcess } from '@rstar/workers';
import { EnginePool } from '../engine.pool';
import { SglangAdapter } from '../sglang.adapter';
import type { SchedulingPolicy } from './engine.picker';

const python = workersPythonForTests();
const CACHE = resolve(__dirname, '../../../../.rstar/models');
/** KV capacity of each engine: four rollouts' reservations (prompt + 120) fit, sixteen at once do not. */
const CAPACITY = 600;
const ENGINES = 2;
/** Rollouts per wave, all sent at once; two waves one after the other per policy through one pool (as policy-serving's pool lives across steps). */
const ROLLOUTS = 32;
const WAVES = 2;
const MAX_NEW = 120;
/**
 * An async run with η = 1: three steps of twelve rollouts, the next step's sent when half of the current
 * one's have finished (so two steps are in flight; the peak, ~24 x (prompt + 120) tokens, is several
 * times the two engines' 1200).
 */
const ETA1: WaveArrival = { waves: 3, perWave: 12, overlapAt: 0.5 };

const retractionsOf = async (adapters: readonly SglangAdapter[]) => (await Promise.all(adapters.map((a) => a.loadStats()))).reduce((s, x) => s + (x?.retractions ?? NaN), 0);

describe.skipIf(!python)('kv-adaptive on reference engines that retract past their KV capacity (real processes over HTTP)', () => {
  let engines: PythonProcess[] = [];
  let adapters: SglangAdapter[];
  let prompt: number[];

  beforeAll(async () => {
    const model = await ensureTinyModel(CACHE);
    engines = await Promise.all(Array.from({ length: ENGINES }, () => startReferenceEngine({ model, kvCapacityTokens: CAPACITY, threads: 1 })));
    adapters = engines.map((e, i) => new SglangAdapter(`ref-${i}`, e.url));
    const tok = ModelTokenizer.load(model);
    prompt = tok.encode(tok.renderer.renderPrompt('What is 12 * 34?', { compact: true }));
  }, 300_000);
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.stop()));
  });

  /** Run the overflowing waves under `policy` in `arrival`; returns the retractions the engines counted meanwhile. */
  async function retractionsUnder(policy: SchedulingPolicy, arrival: WaveArrival): Promise<{ retractions: number; generated: number; observed: number }> {
    const pool = await EnginePool.create(adapters, policy, { probeIntervalMs: 0, loadProbeMs: 100 });
    await pool.observeLoads(); // baseline of the counters the pool watches
    const before = await retractionsOf(adapters);
    try {
      const waves = await submitInWaves(arrival, async (w, i) => {
        const s = pool.open(`${policy}:${w}:${i}`);
        try {
          return await s.generate({ rid: `${policy}-${w}-${i}`, inputIds: prompt, sampling: { temperature: 1, topP: 1, seed: i, maxNewTokens: MAX_NEW } });
        } finally {
          s.release();
        }
      });
      const generated = waves.flat().reduce((a, o) => a + o.tokenIds.length, 0);
      await pool.observeLoads();
      return { retractions: (await retractionsOf(adapters)) - before, generated, observed: pool.scheduler.stats.retractions };
    } finally {
      pool.close();
    }
  }

  it('the engine reports its KV usage and retraction counter on /metrics under SGLang\'s names', async () => {
    const text = await (await fetch(`${engines[0].url}/metrics`)).text();
    expect(text).toMatch(/^sglang:num_used_tokens \d+$/m);
    expect(text).toMatch(/^sglang:num_retracted_requests_total \d+$/m);
    expect(text).toContain(`sglang:max_total_num_tokens ${CAPACITY}`);
    expect(await adapters[0].loadStats()).toMatchObject({ kvCapacityTokens: CAPACITY, kvUsedTokens: expect.any(Number), retractions: expect.any(Number) });
  });

  it('causes fewer retractions than least-requests on the same overflowing batch (counts from the engine)', async () => {
    // overlapAt 1: each wave starts when the one before has finished.
    const sequential = { waves: WAVES, perWave: ROLLOUTS, overlapAt: 1 };
    const least = await retractionsUnder('least-requests', sequential);
    const adaptive = await retractionsUnder('kv-adaptive', sequential);
    // The batch overflows the engine when it is all sent at once...
    expect(least.retractions).toBeGreaterThan(0);
    // ...and both policies did real work of the same size (seeded sampling).
    expect(adaptive.generated).toBeGreaterThan(WAVES * ROLLOUTS);
    expect(least.generated).toBeGreaterThan(WAVES * ROLLOUTS);
    expect(adaptive.retractions).toBeLessThan(least.retractions);
    // The pool saw the same retractions through the route it admits by.
    expect(least.observed).toBe(least.retractions);
  }, 300_000);

  it('causes fewer retractions than least-requests when the steps arrive overlapping, as with η = 1 (counts from the engine)', async () => {
    const least = await retractionsUnder('least-requests', ETA1);
    const adaptive = await retractionsUnder('kv-adaptive', ETA1);
    // Two steps in flight overflow the engines under a policy blind to KV...
    expect(least.retractions).toBeGreaterThan(0);
    expect(least.generated).toBeGreaterThan(ETA1.waves * ETA1.perWave);
    expect(adaptive.generated).toBeGreaterThan(ETA1.waves * ETA1.perWave);
    // ...and kv-adaptive, admitting the next step's rollouts as the projection frees room, retracts less.
    expect(adaptive.retractions).toBeLessThan(least.retractions);
    expect(adaptive.observed).toBe(adaptive.retractions);
  }, 300_000);
});
