import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRollout, type ToolExecutor, type TurnRecord } from '@rstar/agent';
import { EnginePool, SglangAdapter, startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { PolicyModel } from '@rstar/policy';
import { until } from '@rstar/testing';
import { PartialRolloutSession } from './partial-rollout.session';
import { PolicyVersionGate } from './policy-version.gate';

/*
 * Partial rollouts on the built-in engine (its HTTP server, SGLang routes): the same interruption as on the
 * reference engine — an update mid-turn splits the turn into two versions, and each stretch is exactly what
 * the engine samples under its own weights.
 */

const CFG = { layers: 1, dModel: 16, heads: 2, context: 256, ffMult: 2 };
const RUN = 'run-partial-builtin';
const BUDGET = 180;
const noTools: ToolExecutor = { execute: () => Promise.reject(new Error('this test expects no tool call')) };

describe('partial rollouts: a weight update interrupts a turn on the built-in engine', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rstar-partial-builtin-'));
  let engine: BuiltinEngine;
  let hash0: string;
  let hash1: string;

  beforeAll(async () => {
    for (const [seed, dir] of [[1, 'v0'], [2, 'v1']] as const) {
      const m = await PolicyModel.create(CFG, seed);
      const h = m.save(join(tmp, dir)).hash;
      if (dir === 'v0') hash0 = h;
      else hash1 = h;
      m.dispose();
    }
    engine = await startBuiltinEngine({ port: 0, checkpointDir: join(tmp, 'v0'), kvCapacityTokens: 4096, batchWindowMs: 1 });
  }, 120_000);
  afterAll(async () => {
    await engine?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('given an update mid-turn, then the turn shows both versions and each stretch is the engine sampling under its weights', async () => {
    const adapter = new SglangAdapter('builtin-0', engine.url, undefined, 'builtin');
    const tok = engine.model.tokenizer;
    const promptText = 'What is 3 * 4?';
    const prompt = tok.encode(promptText);
    let seed = 1;
    for (; seed < 60; seed++) {
      const g = await adapter.generate({ rid: `probe-${seed}`, inputIds: prompt, sampling: { temperature: 1, topP: 1, seed, maxNewTokens: BUDGET } });
      if (g.tokenIds.length >= 120) break;
    }
    expect(seed).toBeLessThan(60);
    const pool = await EnginePool.create([adapter], 'kv-budget', { probeIntervalMs: 0 });
    const gate = new PolicyVersionGate({ runId: RUN, version: 0, at: 0 });
    try {
      await gate.enter(RUN, 0, 1000, true);
      const turns: TurnRecord[] = [];
      const session = new PartialRolloutSession(pool.open('b1'), gate, RUN, (rid) => pool.interrupt('b1', rid));
      const before = engine.scheduler.stats().decodeSteps;
      const rollout = runRollout(
        { rolloutId: 'b1', problem: 'x', promptText, sampling: { temperature: 1, topP: 1, seed }, budget: { maxTokens: BUDGET, maxTurns: 1 } },
        { engine: session, tools: noTools, tokenizer: tok, onTurn: (t) => void turns.push(t) },
      );
      await until(() => engine.scheduler.stats().decodeSteps >= before + 20, 'twenty decode steps', { everyMs: 1 });
      expect(await gate.update({ runId: RUN, version: 1, at: 1 }, () => pool.updateWeights(join(tmp, 'v1')))).toBe(true);
      const out = await rollout;
      gate.leave(true);
      const t = turns[0];
      expect(t.segments?.map((s) => [s.policyVersion, s.weightVersion])).toEqual([[0, hash0], [1, hash1]]);
      const k = t.segments![1].fromToken;
      expect(k).toBeGreaterThan(0);
      expect(k).toBeLessThan(t.tokenIds.length);
      expect(out.responseTokenIds).toEqual(t.tokenIds);
      expect(out.logprobs).toEqual(t.logprobs);
      expect(out.lossMask).toEqual(t.tokenIds.map(() => 1));
      const again1 = await adapter.generate({ rid: 'check-1', inputIds: [...prompt, ...t.tokenIds.slice(0, k)], sampling: { temperature: 1, topP: 1, seed: seed + 1, maxNewTokens: BUDGET - k } });
      expect(again1.tokenIds).toEqual(t.tokenIds.slice(k));
      expect(again1.logprobs).toEqual(t.logprobs.slice(k));
      await pool.updateWeights(join(tmp, 'v0'));
      const again0 = await adapter.generate({ rid: 'check-0', inputIds: prompt, sampling: { temperature: 1, topP: 1, seed, maxNewTokens: k } });
      expect(again0.tokenIds).toEqual(t.tokenIds.slice(0, k));
      expect(again0.logprobs).toEqual(t.logprobs.slice(0, k));
    } finally {
      pool.close();
    }
  }, 300_000);
});
