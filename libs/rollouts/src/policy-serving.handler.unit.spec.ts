import { CharTokenizer, IM_END, renderToolCall, type GenerateRequest, type GenerateResult } from '@rstar/agent';
import { ids, makeEvent, type RstarEvent } from '@rstar/contracts';
import { InProcessBus } from '@rstar/messaging';
import { createLogger } from '@rstar/telemetry';
import { afterEach, describe, expect, it } from 'vitest';
import { EnginePool, EngineContextExceededError, isContextExceededAnswer, type EngineAdapter, type WeightTransfer } from '@rstar/engines';
import { PolicyFollower, PolicyFollowerClosedError } from './policy.follower';
import { PolicyServingHandler, type PolicyServingOptions } from './policy-serving.handler';
import { TurnJournal } from './turn.journal';
import { PolicyVersionGate } from './policy-version.gate';
import { until } from '@rstar/testing';

const tok = new CharTokenizer();
const quiet = createLogger('test', { write: () => undefined });

/** An in-memory engine: first turn calls the tool, second answers; records weight loads. */
class ScriptedEngine implements EngineAdapter {
  readonly kind = 'memory';
  readonly log: string[] = [];
  hold: Promise<void> = Promise.resolve();
  /** Called before each generation; throw from it to make the engine fail that request. */
  fault: (rid: string) => void = () => undefined;
  constructor(readonly id: string) {}
  async serverInfo() { return { kvCapacityTokens: 100_000 }; }
  async generate(req: GenerateRequest): Promise<GenerateResult> {
    await this.hold;
    this.fault(req.rid);
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
    await until(() => handler.activeRollouts === 1, 'rollout 0 running');
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

  it('a PolicyUpdated with a distributed sync has every engine receive its buckets in order (version on the last), nothing loaded from disk', async () => {
    const engine = new ScriptedEngine('m0');
    const received: string[] = [];
    let held = '0';
    const transfer: WeightTransfer = {
      initGroup: async () => undefined,
      receiveBucket: async (b, o) => {
        received.push(`${o.groupName} ${b.names.join(',')} ${o.weightVersion ?? '-'} ${o.flushCache ?? false}`);
        if (o.weightVersion !== undefined) held = o.weightVersion;
      },
      finish: async () => void received.push('finish'),
      promptLogprobs: async () => [],
    };
    Object.assign(engine, { weightTransfer: () => transfer, loadedWeights: async () => ({ weightVersion: held, manifestHash: null }) });
    const seen = await setup(engine);
    const buckets = [{ names: ['a', 'b'], dtypes: ['float32', 'float32'], shapes: [[2], [2]], bytes: 16 }, { names: ['c'], dtypes: ['float32'], shapes: [[1]], bytes: 4 }];
    await bus.publish(makeEvent('PolicyUpdated', {
      runId: 'run1', streamId: 'run-run1', key: 'v1', producer: 'test',
      data: { version: 1, checkpointUri: '/ckpt/v1', checkpointHash: 'h1', sync: { kind: 'distributed', step: 0, groupName: 'g1', dtype: 'float32', buckets } },
    }));
    await bus.publish(request(1, 1));
    await until(() => seen.some((e) => e.type === 'RolloutCompleted'), 'the rollout at version 1');
    expect(received).toEqual(['g1 a,b - false', 'g1 c 1 true', 'finish']);
    expect(engine.log.filter((l) => l.startsWith('load'))).toEqual([]);
    expect(handler.policyVersion).toBe(1);
  });
});

describe('PolicyServingHandler: context overflow and recovery', () => {
  let bus: InProcessBus | undefined;
  let handler: PolicyServingHandler | undefined;
  afterEach(async () => {
    await handler?.stop();
    await bus?.close();
  });
  async function start(engine: ScriptedEngine, over: Partial<PolicyServingOptions> = {}) {
    const pool = await EnginePool.create([engine], 'kv-budget', { probeIntervalMs: 0 });
    const h = new PolicyServingHandler(bus!, { pool, tokenizer: tok, logger: quiet, instanceId: 'i0', ackWaitMs: 3_000, toolResultTimeoutMs: 600_000, ...over });
    await h.start();
    return h;
  }
  async function world() {
    bus = new InProcessBus({ logger: quiet });
    const seen: RstarEvent[] = [];
    const executed: string[] = [];
    await bus.subscribe({ durable: 'observer', types: ['TurnGenerated', 'ToolCallRequested', 'RolloutCompleted', 'DeadLettered'], handler: async (e) => void seen.push(e) });
    await bus.subscribe({
      durable: 'tools', types: ['ToolCallRequested'],
      handler: async (e) => {
        executed.push(e.data.callId);
        await bus!.publish(makeEvent('ToolCallCompleted', {
          runId: e.runId, streamId: e.streamId, key: e.data.callId, producer: 'test', causedBy: e,
          data: { callId: e.data.callId, rolloutId: e.data.rolloutId, turn: e.data.turn, status: 'ok', stdout: '42\n', stderr: '', exitCode: 0, signal: null, wallMs: 5, cpuMs: 4, truncated: false },
        }));
      },
    });
    return { seen, executed };
  }
  const ofType = <T extends RstarEvent['type']>(seen: RstarEvent[], t: T) => seen.filter((e) => e.type === t) as Extract<RstarEvent, { type: T }>[];

  it('completes a rollout whose next turn exceeds the engine context as truncated (context_exceeded) instead of dead-lettering it', async () => {
    const { seen } = await world();
    const engine = new ScriptedEngine('m0');
    engine.fault = (rid) => {
      if (rid.endsWith(':1')) throw new EngineContextExceededError('m0', "/generate answered HTTP 400: This model's maximum context length is 160 tokens");
    };
    handler = await start(engine);
    await bus!.publish(request(0));
    await until(() => ofType(seen, 'RolloutCompleted').length === 1, 'RolloutCompleted');
    expect(ofType(seen, 'RolloutCompleted')[0].data).toMatchObject({ finishReason: 'context_exceeded', truncated: true, turns: 1, toolCalls: 1, toolErrors: 0, engineId: 'm0' });
    expect(ofType(seen, 'DeadLettered')).toHaveLength(0);
  });

  it('a retried rollout continues from its published turn and gets its deduplicated tool call\'s result back', async () => {
    const { seen, executed } = await world();
    const engine = new ScriptedEngine('m0');
    let failures = 0;
    // The engine fails turn 1 once with a non-engine error: the rollout's message is retried.
    engine.fault = (rid) => {
      if (rid.endsWith(':1') && failures++ === 0) throw new Error('connection reset by a proxy');
    };
    handler = await start(engine, { ackWaitMs: 1_000 });
    await bus!.publish(request(0));
    await until(() => ofType(seen, 'RolloutCompleted').length === 1, 'RolloutCompleted after the retry');
    const rid = ids.rollout('run1', 0, 0, 0);
    // Turn 0 was published, so the retry takes it from the journal instead of sampling it again.
    expect(engine.log).toEqual([`gen ${rid}:0`, `gen ${rid}:1`]);
    // The retry re-requested the same call id: the bus dropped it, the tool ran once, its result was redelivered.
    expect(executed).toEqual([ids.toolCall(rid, 0, 0)]);
    expect(ofType(seen, 'ToolCallRequested')).toHaveLength(1);
    expect(ofType(seen, 'TurnGenerated').map((e) => e.id)).toEqual([`TurnGenerated:${rid}:0`, `TurnGenerated:${rid}:1`]);
    expect(ofType(seen, 'RolloutCompleted')[0].data).toMatchObject({ finishReason: 'answer', toolCalls: 1, toolErrors: 0 });
    expect(ofType(seen, 'RolloutCompleted')[0].data.responseText).toContain('stdout: 42');
  });

  it('a restarted instance (same instance id) reloads the newest policy version the stopped one held', async () => {
    const { seen } = await world();
    const first = new ScriptedEngine('m0');
    handler = await start(first);
    await bus!.publish(makeEvent('PolicyUpdated', { runId: 'run1', streamId: 'run-run1', key: 'v1', producer: 'test', data: { version: 1, checkpointUri: '/ckpt/v1', checkpointHash: 'h1' } }));
    await until(() => handler!.policyVersion === 1, 'version 1 loaded');
    expect(handler.durables).toMatchObject({ toolResults: 'policy-serving-tool-results-i0', policy: 'policy-serving-policy-i0' });

    await handler.stop();
    const second = new ScriptedEngine('m0');
    handler = await start(second);
    expect(handler.policyVersion).toBe(0);
    await bus!.publish(request(1, 1));
    await until(() => ofType(seen, 'RolloutCompleted').length === 1, 'the version-1 rollout');
    expect(second.log[0]).toBe('load /ckpt/v1');
    expect(ofType(seen, 'RolloutCompleted')[0].data.policyVersion).toBe(1);
  });
});

describe('TurnJournal', () => {
  const turn = (n: number) => ({ turn: n, tokenIds: [n], logprobs: [-0.1], text: `t${n}`, finishReason: 'stop' as const, engineId: 'e0' });

  it('keeps each rollout\'s turns until forgotten, expiring the least recently recorded by age and count', () => {
    let now = 0;
    const j = new TurnJournal({ keepMs: 1_000, maxRollouts: 2, clock: () => now });
    j.record('a', turn(0));
    j.record('a', turn(1));
    j.record('a', turn(1)); // a redelivered copy
    expect([j.get('a', 0)?.text, j.get('a', 1)?.text, j.get('a', 2)]).toEqual(['t0', 't1', undefined]);
    j.record('b', turn(0));
    now = 500;
    j.record('a', turn(2)); // a is now the most recent
    j.record('c', turn(0)); // over the count: b (least recently recorded) goes
    expect([j.get('a', 2)?.text, j.get('b', 0), j.get('c', 0)?.text]).toEqual(['t2', undefined, 't0']);
    now = 1_600;
    j.record('d', turn(0)); // a and c are older than keepMs
    expect([j.get('a', 0), j.get('c', 0), j.size]).toEqual([undefined, undefined, 1]);
    j.forget('d');
    expect(j.size).toBe(0);
  });
});

describe('isContextExceededAnswer', () => {
  it('recognises the context-window refusals of SGLang, vLLM and the built-in engine, and nothing else', () => {
    expect(isContextExceededAnswer(400, "The input (300 tokens) is longer than the model's context length (256 tokens).")).toBe(true);
    expect(isContextExceededAnswer(400, "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens")).toBe(true);
    expect(isContextExceededAnswer(400, '{"error":{"code":"context_overflow","message":"input_ids: sequence of 170 tokens exceeds the model context of 160"}}')).toBe(true);
    expect(isContextExceededAnswer(400, '{"error":{"code":"invalid_request","message":"sampling_params.top_p must be in (0, 1]"}}')).toBe(false);
    expect(isContextExceededAnswer(500, 'context length exceeded while the server was restarting')).toBe(false);
  });
});

/** Version `n` of run1, recorded at `n` seconds. */
const v = (n: number) => ({ runId: 'run1', version: n, at: n * 1000 });

describe('PolicyFollower', () => {
  it('coalesces a burst of updates into a load of the newest and holds each until superseded', async () => {
    const gate = new PolicyVersionGate(0);
    const loads: string[] = [];
    let release!: () => void;
    const first = new Promise<void>((r) => (release = r));
    const f = new PolicyFollower(gate, async (uri) => {
      loads.push(uri);
      if (loads.length === 1) await first;
    });
    const a1 = f.apply(v(1), '/v1');
    const a2 = f.apply(v(2), '/v2');
    const a3 = f.apply(v(3), '/v3');
    release();
    expect(await Promise.all([a1, a2, a3])).toEqual([true, true, true]);
    // All three arrived before the load started: one load, of the newest.
    expect(loads).toEqual(['/v3']);
    await f.superseded(v(2));
    let held3 = true;
    const h3 = f.superseded(v(3)).then(() => (held3 = false));
    await new Promise((r) => setImmediate(r));
    expect(held3).toBe(true);
    expect(await f.apply(v(2), '/v2')).toBe(false);
    await f.apply(v(4), '/v4');
    await h3;
    expect(loads).toEqual(['/v3', '/v4']);
  });

  it('rejects a failed load (so the update is redelivered) and releases holds on close', async () => {
    const gate = new PolicyVersionGate(0);
    let fail = true;
    const f = new PolicyFollower(gate, async () => {
      if (fail) throw new Error('checkpoint missing');
    });
    await expect(f.apply(v(1), '/v1')).rejects.toThrow('checkpoint missing');
    expect(gate.loadedVersion).toBe(0);
    fail = false;
    expect(await f.apply(v(1), '/v1')).toBe(true);
    const held = f.superseded(v(1));
    f.close('stopping');
    await expect(held).rejects.toBeInstanceOf(PolicyFollowerClosedError);
    await expect(f.apply(v(2), '/v2')).rejects.toBeInstanceOf(PolicyFollowerClosedError);
  });
});

describe('PolicyVersionGate', () => {
  it('lets rollouts asking for a version not yet loaded time out (null) instead of running on old weights', async () => {
    const gate = new PolicyVersionGate(0);
    expect(await gate.enter('run1', 1, 5)).toBeNull();
    expect(await gate.enter('run1', 0, 5)).toBe(0);
    gate.leave();
  });

  it('skips updates that are not newer', async () => {
    const gate = new PolicyVersionGate(2);
    let loaded = 0;
    expect(await gate.update(v(2), async () => void loaded++)).toBe(false);
    expect(await gate.update(v(3), async () => void loaded++)).toBe(true);
    expect([loaded, gate.loadedVersion]).toEqual([1, 3]);
  });

  it('keeps versions per run: a new run waits for its own version 1, an older run\'s late update is skipped', async () => {
    const gate = new PolicyVersionGate(0);
    await gate.update({ runId: 'A', version: 2, at: 1_000 }, async () => undefined);
    // Run B's version 0 is its starting policy; its version 1 is not run A's version 2.
    expect(await gate.enter('B', 0, 5)).toBe(0);
    gate.leave();
    expect(await gate.enter('B', 1, 5)).toBeNull();
    expect(await gate.update({ runId: 'B', version: 1, at: 2_000 }, async () => undefined)).toBe(true);
    expect(await gate.enter('B', 1, 5)).toBe(1);
    gate.leave();
    // Run A's update redelivered after a restart (recorded earlier) must not replace run B's weights.
    expect(await gate.update({ runId: 'A', version: 2, at: 1_000 }, async () => undefined)).toBe(false);
    expect(gate.loaded).toEqual({ runId: 'B', version: 1, at: 2_000 });
  });
});
