import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelTokenizer, runRollout, type ToolExecutor, type TurnRecord } from '@rstar/agent';
import { ids, makeEvent, type RstarEvent } from '@rstar/contracts';
import { EnginePool, SglangAdapter } from '@rstar/engines';
import { JetStreamBus } from '@rstar/messaging';
import { until } from '@rstar/testing';
import { ensureTinyModel, startReferenceEngine, workersPythonForTests, type PythonProcess } from '@rstar/workers';
import { PartialRolloutSession } from './partial-rollout.session';
import { PolicyVersionGate } from './policy-version.gate';
import { PolicyServingHandler } from './policy-serving.handler';

/*
 * Partial rollouts on a real reference engine (workers/trainer, a Python process serving hf-tiny): a weight
 * update arriving while a turn is generated interrupts it; the turn continues under the new weights and its
 * tokens record both versions. Then each stretch is regenerated from scratch under its own version: the
 * engine gives back exactly the turn's token ids and logprobs, so nothing was re-tokenized or altered.
 */

const python = workersPythonForTests();
const CACHE = resolve(__dirname, '../../../.rstar/models');
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const RUN = 'run-partial';
const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const tag = `pr${process.pid}${Date.now().toString(36)}`;
const BUDGET = 400;

/**
 * A checkpoint directory as the trainer worker writes one: the model's files, manifest.json, STABLE; with
 * `weightsFrom`, the weights (*.safetensors) of that model instead (same shapes, the first one's tokenizer).
 */
function checkpointOf(model: string, dir: string, policyVersion: number, weightsFrom?: string): string {
  cpSync(model, dir, { recursive: true });
  if (weightsFrom) for (const f of readdirSync(weightsFrom).filter((n) => n.endsWith('.safetensors'))) cpSync(join(weightsFrom, f), join(dir, f));
  const files: Record<string, { sha256: string; bytes: number }> = {};
  for (const f of readdirSync(dir).sort()) files[f] = { sha256: sha(readFileSync(join(dir, f))), bytes: statSync(join(dir, f)).size };
  const manifest = JSON.stringify({ files, format: 'rstar.checkpoint-manifest/1', policyVersion, runId: RUN, step: policyVersion - 1 }, null, 1) + '\n';
  writeFileSync(join(dir, 'manifest.json'), manifest);
  writeFileSync(join(dir, 'STABLE'), '');
  return sha(manifest);
}

const noTools: ToolExecutor = { execute: () => Promise.reject(new Error('this test expects no tool call')) };

describe.skipIf(!python)('partial rollouts: a weight update interrupts a turn on the reference engine', () => {
  let model0: string;
  let model1: string;
  let tmp: string;
  let engine: PythonProcess;
  let tok: ModelTokenizer;
  let adapter: SglangAdapter;

  beforeAll(async () => {
    model0 = await ensureTinyModel(CACHE);
    model1 = await ensureTinyModel(CACHE, { seed: 1 });
    tmp = mkdtempSync(join(tmpdir(), 'rstar-partial-'));
    engine = await startReferenceEngine({ model: model0, kvCapacityTokens: 8192, threads: 1, weightVersion: '0' });
    tok = ModelTokenizer.load(model0);
    adapter = new SglangAdapter('ref-0', engine.url);
  }, 300_000);
  afterAll(async () => {
    await engine?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const decodeSteps = async (): Promise<number> => ((await (await fetch(`${engine.url}/get_server_info`)).json()) as { decode_steps: number }).decode_steps;

  it('given an update mid-turn, then the turn shows versions 0 and 1, and each stretch is exactly what the engine samples under its version', async () => {
    const promptText = tok.renderer.renderPrompt('What is 12 * 34?', { compact: true });
    const prompt = tok.encode(promptText);
    // A seed whose turn under version 0 runs long enough to be interrupted part-way.
    let seed = 1;
    for (; seed < 40; seed++) {
      const g = await adapter.generate({ rid: `probe-${seed}`, inputIds: prompt, sampling: { temperature: 1, topP: 1, seed, maxNewTokens: BUDGET } });
      if (g.tokenIds.length >= 200) break;
    }
    expect(seed).toBeLessThan(40);
    const ck1 = join(tmp, 'v1');
    const hash1 = checkpointOf(model0, ck1, 1, model1);

    const pool = await EnginePool.create([adapter], 'kv-budget', { probeIntervalMs: 0 });
    const gate = new PolicyVersionGate({ runId: RUN, version: 0, at: 0 });
    try {
      expect(await gate.enter(RUN, 0, 1000, true)).toBe(0);
      const turns: TurnRecord[] = [];
      const session = new PartialRolloutSession(pool.open('r1'), gate, RUN, (rid) => pool.interrupt('r1', rid));
      const before = await decodeSteps();
      const rollout = runRollout(
        { rolloutId: 'r1', problem: 'x', promptText, sampling: { temperature: 1, topP: 1, seed }, budget: { maxTokens: BUDGET, maxTurns: 1 } },
        { engine: session, tools: noTools, tokenizer: tok, onTurn: (t) => void turns.push(t) },
      );
      // Let the engine sample a few dozen tokens, then publish the new weights.
      while ((await decodeSteps()) < before + 30) await new Promise((r) => setTimeout(r, 5));
      expect(gate.generatingTurns).toBe(1);
      const applied = await gate.update({ runId: RUN, version: 1, at: 1 }, () => pool.updateWeights(ck1, { version: 1, checkpointHash: hash1 }));
      expect(applied).toBe(true);
      const out = await rollout;
      gate.leave(true);

      expect(turns).toHaveLength(1);
      const t = turns[0];
      expect(t.segments).toHaveLength(2);
      const [s0, s1] = t.segments!;
      expect(s0).toEqual({ fromToken: 0, policyVersion: 0, weightVersion: '0' });
      expect(s1.policyVersion).toBe(1);
      expect(s1.weightVersion).toBe('1');
      const k = s1.fromToken;
      expect(k).toBeGreaterThan(0);
      expect(k).toBeLessThan(t.tokenIds.length);
      // The rollout is the turn: its tokens and logprobs, every one a model token of the loss mask.
      expect(out.responseTokenIds).toEqual(t.tokenIds);
      expect(out.logprobs).toEqual(t.logprobs);
      expect(out.lossMask).toEqual(t.tokenIds.map(() => 1));
      expect(t.text).toBe(tok.decode(t.tokenIds));

      // The second stretch is what version 1 samples from the prompt and the first stretch's token ids.
      await adapter.flushCache();
      const again1 = await adapter.generate({ rid: 'check-1', inputIds: [...prompt, ...t.tokenIds.slice(0, k)], sampling: { temperature: 1, topP: 1, seed: seed + 1, maxNewTokens: BUDGET - k } });
      expect(again1.weightVersion).toBe('1');
      expect(again1.tokenIds).toEqual(t.tokenIds.slice(k));
      expect(again1.logprobs).toEqual(t.logprobs.slice(k));
      // The first stretch is what version 0 samples from the prompt (reload the start weights to check).
      const ck0 = join(tmp, 'v2');
      const hash0 = checkpointOf(model0, ck0, 2);
      await pool.updateWeights(ck0, { version: 2, checkpointHash: hash0 });
      const again0 = await adapter.generate({ rid: 'check-0', inputIds: prompt, sampling: { temperature: 1, topP: 1, seed, maxNewTokens: k } });
      expect(again0.tokenIds).toEqual(t.tokenIds.slice(0, k));
      expect(again0.logprobs).toEqual(t.logprobs.slice(0, k));
    } finally {
      pool.close();
    }
  }, 300_000);

  it('given RolloutRequested with partialRollouts and a PolicyUpdated mid-turn over JetStream, then policy-serving records one turn with two versions and the rollout is exactly its tokens', async () => {
    const run = `${RUN}-bus`;
    // Start weights labelled version 0 again (the first test left others loaded).
    const start = new SglangAdapter('ref-0', engine.url);
    checkpointOf(model0, join(tmp, 'v0b'), 0);
    await start.updateWeights(join(tmp, 'v0b'), { version: 0 });
    const ck = join(tmp, 'bus-v1');
    const hash = checkpointOf(model0, ck, 1, model1);
    const promptText = tok.renderer.renderPrompt('What is 56 * 78?', { compact: true });
    let seed = 1;
    for (; seed < 40; seed++) {
      const g = await start.generate({ rid: `bus-probe-${seed}`, inputIds: tok.encode(promptText), sampling: { temperature: 1, topP: 1, seed, maxNewTokens: BUDGET } });
      if (g.tokenIds.length >= 200) break;
    }
    expect(seed).toBeLessThan(40);

    const bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag });
    const pool = await EnginePool.create([start], 'kv-budget', { probeIntervalMs: 0 });
    const handler = new PolicyServingHandler(bus, { pool, tokenizer: tok, compactPrompt: true, instanceId: tag, ackWaitMs: 5000 });
    const seen: RstarEvent[] = [];
    try {
      await bus.subscribe({ durable: `${tag}-observer`, types: ['TurnGenerated', 'RolloutCompleted'], concurrency: 8, handler: async (ev) => void seen.push(ev) });
      await handler.start();
      const rolloutId = ids.rollout(run, 0, 0, 0);
      const before = await decodeSteps();
      await bus.publish(makeEvent('RolloutRequested', {
        runId: run, streamId: `run-${run}`, key: rolloutId, producer: 'test',
        data: {
          rolloutId, groupId: ids.group(run, 0, 0), step: 0, promptIdx: 0, sampleIdx: 0, promptId: 'p0', problem: 'What is 56 * 78?', gold: '4368',
          samplingParams: { temperature: 1, topP: 1, seed }, budget: { maxTokens: BUDGET, maxTurns: 1 }, policyVersion: 0, partialRollouts: true,
        },
      }));
      await until(async () => (await decodeSteps()) >= before + 30, 'the turn is being sampled', { timeoutMs: 120_000 });
      await bus.publish(makeEvent('PolicyUpdated', { runId: run, streamId: `run-${run}`, key: 'v1', producer: 'test', data: { version: 1, checkpointUri: ck, checkpointHash: hash } }));
      await until(() => seen.some((e) => e.type === 'RolloutCompleted'), 'the rollout completes', { timeoutMs: 120_000 });
      const turns = seen.filter((e): e is RstarEvent<'TurnGenerated'> => e.type === 'TurnGenerated');
      const done = seen.find((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted')!;
      expect(turns).toHaveLength(1);
      const t = turns[0].data;
      expect(t.policyVersion).toBe(0);
      expect(t.segments?.map((x) => [x.policyVersion, x.weightVersion])).toEqual([[0, '0'], [1, '1']]);
      const k = t.segments![1].fromToken;
      expect(k).toBeGreaterThan(0);
      expect(k).toBeLessThan(t.tokenIds.length);
      expect(handler.policyVersion).toBe(1);
      // The rollout the trainer gets is the engine's turn: same ids, same logprobs, all in the loss mask;
      // it counts as started under version 0.
      expect(done.data.policyVersion).toBe(0);
      expect(done.data.responseTokenIds).toEqual(t.tokenIds);
      expect(done.data.logprobs).toEqual(t.logprobs);
      expect(done.data.lossMask).toEqual(t.tokenIds.map(() => 1));
    } finally {
      await handler.stop();
      await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
      await bus.close();
    }
  }, 300_000);
});
