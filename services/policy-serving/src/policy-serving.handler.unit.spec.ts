import { CharTokenizer, IM_END, renderToolCall, type GenerateRequest, type GenerateResult } from '@rstar/agent';
import { ids, makeEvent, type RstarEvent } from '@rstar/contracts';
import { InProcessBus } from '@rstar/messaging';
import { createLogger } from '@rstar/telemetry';
import { afterEach, describe, expect, it } from 'vitest';
import { EnginePool } from './engine/engine.pool';
import type { EngineAdapter } from './engine/engine.port';
import { PolicyServingHandler } from './policy-serving.handler';
import { PolicyVersionGate } from './policy-version.gate';

const tok = new CharTokenizer();
const quiet = createLogger('test', { write: () => undefined });

/** An in-memory engine: first turn calls the tool, second answers; records weight loads. */
class ScriptedEngine implements EngineAdapter {
  readonly kind = 'memory';
  readonly log: string[] = [];
  hold: Promise<void> = Promise.resolve();
  constructor(readonly id: string) {}
  async serverInfo() { return { kvCapacityTokens: 100_000 }; }
  async generate(req: GenerateRequest): Promise<GenerateResult> {
    await this.hold;
    this.log.push(`gen ${req.rid}`);
    const text = req.rid.endsWith(':0') ? `</reason>${renderToolCall('print(6*7)')}${IM_END}` : `</reason><answer>\\boxed{42}</answer>${IM_END}`;
    const tokenIds = tok.encode(text);
    return { tokenIds, logprobs: tokenIds.map(() => -0.1), text, finishReason: 'stop' };
  }
  async abort() {}
  async updateWeights(path: string) { this.log.push(`load ${path}`); }
  async flushCache() { this.log.push('flush'); }
  async health() { return true; }
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const request = (i: number, policyVersion = 0) =>
  makeEvent('RolloutRequested', {
    runId: 'run1', streamId: 'run-run1', key: ids.rollout('run1', 0, 0, i), producer: 'test',
    data: {
      rolloutId: ids.rollout('run1', 0, 0, i), groupId: ids.group('run1', 0, 0), step: 0, promptIdx: 0, sampleIdx: i, promptId: 'p0', problem: 'What is 6*7?', gold: '42',
      samplingParams: { temperature: 1, topP: 1, seed: i }, budget: { maxTokens: 2000, maxTurns: 4 }, policyVersion,
    },
  });

describe('PolicyServingHandler (in-process bus)', () => {
  let bus: InProcessBus;
  let handler: PolicyServingHandler;
  afterEach(async () => {
    await handler?.stop();
    await bus?.close();
  });

  async function setup(engine: ScriptedEngine) {
    bus = new InProcessBus({ logger: quiet });
    const seen: RstarEvent[] = [];
    await bus.subscribe({ durable: 'observer', types: ['TurnGenerated', 'ToolCallRequested', 'RolloutCompleted'], handler: async (e) => void seen.push(e) });
    // The tool-execution role, answering every call with the program's output.
    await bus.subscribe({
      durable: 'tools', types: ['ToolCallRequested'],
      handler: async (e) => bus.publish(makeEvent('ToolCallCompleted', {
        runId: e.runId, streamId: e.streamId, key: e.data.callId, producer: 'test', causedBy: e,
        data: { callId: e.data.callId, rolloutId: e.data.rolloutId, turn: e.data.turn, status: 'ok', stdout: '42\n', stderr: '', exitCode: 0, signal: null, wallMs: 5, cpuMs: 4, truncated: false },
      })),
    });
    const pool = await EnginePool.create([engine], 'kv-budget', { probeIntervalMs: 0 });
    handler = new PolicyServingHandler(bus, { pool, tokenizer: tok, logger: quiet, durable: { toolResults: 'ps-tools' } });
    await handler.start();
    return seen;
  }

  it('runs a rollout through the bus: turns, the tool call, the completion with counters and policy version', async () => {
    const seen = await setup(new ScriptedEngine('m0'));
    await bus.publish(request(0));
    await until(() => seen.some((e) => e.type === 'RolloutCompleted'), 'RolloutCompleted');
    const done = seen.find((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted')!;
    expect(done.data).toMatchObject({ turns: 2, toolCalls: 1, toolErrors: 0, answerBlocks: 1, finishReason: 'answer', engineId: 'm0', policyVersion: 0, truncated: false });
    expect(done.data.responseText).toContain('<tool_response>\nstdout: 42\nexecution time: 0.01s\n</tool_response>');
    expect(done.meta.causationId).toBe(request(0).id);
    await until(() => seen.filter((e) => e.type === 'TurnGenerated').length === 2, 'two TurnGenerated');
    expect(seen.filter((e) => e.type === 'ToolCallRequested').map((e) => e.id)).toEqual([`ToolCallRequested:${ids.toolCall(ids.rollout('run1', 0, 0, 0), 0, 0)}`]);
  });

  it('reloads weights between rollouts: after the running rollout, before the next one, with the new version', async () => {
    const engine = new ScriptedEngine('m0');
    let open!: () => void;
    engine.hold = new Promise<void>((r) => (open = r));
    const seen = await setup(engine);
    await bus.publish(request(0));
    await until(() => handler['running'].size === 1, 'rollout 0 running');
    await bus.publish(makeEvent('PolicyUpdated', { runId: 'run1', streamId: 'run-run1', key: 'v1', producer: 'test', data: { version: 1, checkpointUri: '/ckpt/v1', checkpointHash: 'h1' } }));
    await bus.publish(request(1, 1));
    open();
    await until(() => seen.filter((e) => e.type === 'RolloutCompleted').length === 2, 'two rollouts');
    const versions = Object.fromEntries(seen.filter((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted').map((e) => [e.data.rolloutId, e.data.policyVersion]));
    expect(versions).toEqual({ [ids.rollout('run1', 0, 0, 0)]: 0, [ids.rollout('run1', 0, 0, 1)]: 1 });
    const load = engine.log.indexOf('load /ckpt/v1');
    expect(load).toBeGreaterThan(engine.log.lastIndexOf(`gen ${ids.rollout('run1', 0, 0, 0)}:1`));
    expect(load).toBeLessThan(engine.log.indexOf(`gen ${ids.rollout('run1', 0, 0, 1)}:0`));
    expect(handler.policyVersion).toBe(1);
  });
});

describe('PolicyVersionGate', () => {
  it('lets rollouts asking for a version not yet loaded time out (null) instead of running on old weights', async () => {
    const gate = new PolicyVersionGate(0);
    expect(await gate.enter(1, 5)).toBeNull();
    expect(await gate.enter(0, 5)).toBe(0);
    gate.leave();
  });

  it('skips updates that are not newer', async () => {
    const gate = new PolicyVersionGate(2);
    let loaded = 0;
    expect(await gate.update(2, async () => void loaded++)).toBe(false);
    expect(await gate.update(3, async () => void loaded++)).toBe(true);
    expect([loaded, gate.loadedVersion]).toEqual([1, 3]);
  });
});
