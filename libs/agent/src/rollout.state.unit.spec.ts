import { describe, expect, it } from 'vitest';
import { CharTokenizer } from './char.tokenizer';
import type { EngineSession, ExecRequest, ExecResult, GenerateFinishReason, ToolExecutor } from './ports';
import { ContextExceededError } from './agent.errors';
import { RolloutStateMachine } from './rollout.state';
import { runRollout, type RolloutSpec } from './rollout.runner';
import { IM_END, renderToolCall, renderToolTurn } from './template';

const tok = new CharTokenizer();

/** An engine session that replays scripted turns and records the requests it got. */
function scripted(turns: (string | { text: string; finishReason: GenerateFinishReason })[]): EngineSession & { requests: { inputIds: readonly number[]; maxNewTokens: number; rid: string }[] } {
  const requests: { inputIds: readonly number[]; maxNewTokens: number; rid: string }[] = [];
  return {
    requests,
    async generate(req) {
      requests.push({ inputIds: req.inputIds, maxNewTokens: req.sampling.maxNewTokens, rid: req.rid });
      const t = turns[requests.length - 1];
      if (t === undefined) throw new Error('script exhausted');
      const { text, finishReason } = typeof t === 'string' ? { text: t, finishReason: 'stop' as const } : t;
      let ids = tok.encode(text);
      const fr = ids.length > req.sampling.maxNewTokens ? 'length' : finishReason;
      ids = ids.slice(0, req.sampling.maxNewTokens);
      return { tokenIds: ids, logprobs: ids.map(() => -0.5), text: tok.decode(ids), finishReason: fr, engineId: 'e0' };
    },
  };
}

function tools(out: (req: ExecRequest) => Partial<ExecResult> = () => ({ stdout: '4\n' })): ToolExecutor & { calls: ExecRequest[] } {
  const calls: ExecRequest[] = [];
  return {
    calls,
    async execute(req) {
      calls.push(req);
      return { status: 'ok', stdout: '', stderr: '', exitCode: 0, signal: null, wallMs: 10, cpuMs: 5, truncated: false, ...out(req) };
    },
  };
}

const spec = (over: Partial<RolloutSpec> = {}): RolloutSpec => ({
  rolloutId: 'r1', problem: 'What is 2+2?', sampling: { temperature: 1, topP: 1, seed: 1 }, budget: { maxTokens: 2000, maxTurns: 10 }, compactPrompt: true, ...over,
});

const callTurn = (code: string) => `I will compute.</reason>${renderToolCall(code)}${IM_END}`;
const answerTurn = `It is 4.</reason><answer>\\boxed{4}</answer>${IM_END}`;

function expectMaskCoversModelTokens(r: Awaited<ReturnType<typeof runRollout>>): void {
  const modelIds = r.turnRecords.flatMap((t) => t.tokenIds);
  expect(r.responseTokenIds.filter((_, i) => r.lossMask[i] === 1)).toEqual(modelIds);
  expect(r.lossMask).toHaveLength(r.responseTokenIds.length);
  expect(r.logprobs).toHaveLength(r.responseTokenIds.length);
  r.lossMask.forEach((m, i) => expect(m === 0 ? r.logprobs[i] === 0 : true).toBe(true));
  expect(tok.decode(r.responseTokenIds)).toBe(r.responseText);
}

describe('runRollout', () => {
  it('runs call -> tool response -> answer, masking exactly the model tokens', async () => {
    const engine = scripted([callTurn('print(2+2)'), answerTurn]);
    const ex = tools();
    const r = await runRollout(spec(), { engine, tools: ex, tokenizer: tok });
    expect(r).toMatchObject({ turns: 2, toolCalls: 1, toolErrors: 0, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer', engineId: 'e0' });
    expect(ex.calls).toEqual([expect.objectContaining({ callId: 'call:r1:0:0', code: 'print(2+2)', input: '', session: null, timeoutMs: 4000, memoryMb: 384 })]);
    expect(r.responseText).toContain(renderToolTurn(['stdout: 4\nexecution time: 0.01s']));
    expectMaskCoversModelTokens(r);
    // the second request resends the full context and asks for the remaining budget
    expect(engine.requests[1].inputIds).toEqual([...r.promptTokenIds, ...r.responseTokenIds.slice(0, engine.requests[1].inputIds.length - r.promptTokenIds.length)]);
    expect(engine.requests[1].maxNewTokens).toBe(2000 - (engine.requests[1].inputIds.length - r.promptTokenIds.length));
    expect(engine.requests.map((q) => q.rid)).toEqual(['r1:0', 'r1:1']);
  });

  it('answers a decode failure itself and counts it as erroneous', async () => {
    const engine = scripted([`</reason><tool_call>{"name": "python_code_with_standard_io", "arguments": {"code": ""}}</tool_call>${IM_END}`, answerTurn]);
    const ex = tools();
    const r = await runRollout(spec(), { engine, tools: ex, tokenizer: tok });
    expect(ex.calls).toHaveLength(0);
    expect(r).toMatchObject({ toolCalls: 1, toolErrors: 1, finishReason: 'answer' });
    expect(r.toolCallRecords[0].responseText).toBe('Failed to decode tool call: "code" is empty');
    expectMaskCoversModelTokens(r);
  });

  it('counts a failed execution as erroneous and shows its reason', async () => {
    const r = await runRollout(spec(), { engine: scripted([callTurn('while True: pass'), answerTurn]), tools: tools(() => ({ status: 'timeout', wallMs: 4000 })), tokenizer: tok });
    expect(r.toolErrors).toBe(1);
    expect(r.toolCallRecords[0].responseText).toBe('reason: timeout\nexecution time: 4.00s');
  });

  it('executes only the first call of a turn by default, all of them with maxParallelCalls', async () => {
    const two = `</reason>${renderToolCall('print(1)')}${renderToolCall('print(2)')}${IM_END}`;
    const one = tools();
    await runRollout(spec(), { engine: scripted([two, answerTurn]), tools: one, tokenizer: tok });
    expect(one.calls.map((c) => c.code)).toEqual(['print(1)']);
    const both = tools((q) => ({ stdout: q.code.slice(6, 7) }));
    const r = await runRollout(spec(), { engine: scripted([two, answerTurn]), tools: both, tokenizer: tok }, { maxParallelCalls: 4 });
    expect(both.calls.map((c) => c.callId)).toEqual(['call:r1:0:0', 'call:r1:0:1']);
    // consecutive results share one user turn
    expect(r.responseText).toContain(renderToolTurn(['stdout: 1\nexecution time: 0.01s', 'stdout: 2\nexecution time: 0.01s']));
  });

  it('gives jupyter_code calls the rollout as their session', async () => {
    const ex = tools();
    await runRollout(spec(), { engine: scripted([`</reason>${renderToolCall('x=1', '', 'jupyter_code')}${IM_END}`, answerTurn]), tools: ex, tokenizer: tok });
    expect(ex.calls[0]).toMatchObject({ tool: 'jupyter_code', session: 'r1' });
  });

  it('ends without a tool call as no_tool_call when there is no answer', async () => {
    const r = await runRollout(spec(), { engine: scripted([`I give up.${IM_END}`]), tools: tools(), tokenizer: tok });
    expect(r).toMatchObject({ finishReason: 'no_tool_call', turns: 1, toolCalls: 0, truncated: false });
  });

  it('stops at max turns without executing the last turn\'s call', async () => {
    const ex = tools();
    const r = await runRollout(spec({ budget: { maxTokens: 5000, maxTurns: 2 } }), { engine: scripted([callTurn('1'), callTurn('2')]), tools: ex, tokenizer: tok });
    expect(r).toMatchObject({ finishReason: 'max_turns', turns: 2, toolCalls: 1, truncated: false });
    expect(ex.calls).toHaveLength(1);
    expect(r.lossMask.at(-1)).toBe(1);
  });

  it('marks a turn cut by the budget as truncated', async () => {
    const engine = scripted(['x'.repeat(500)]);
    const r = await runRollout(spec({ budget: { maxTokens: 100, maxTurns: 10 } }), { engine, tools: tools(), tokenizer: tok });
    expect(r).toMatchObject({ finishReason: 'budget', truncated: true, turns: 1 });
    expect(r.responseTokenIds).toHaveLength(100);
    expect(engine.requests[0].maxNewTokens).toBe(100);
  });

  it('stops before a tool response that would not fit, so the last token is a model token', async () => {
    const first = callTurn('print(2+2)');
    const budget = tok.encode(first).length + 10; // room for the call, not for its response
    const r = await runRollout(spec({ budget: { maxTokens: budget, maxTurns: 10 } }), { engine: scripted([first]), tools: tools(() => ({ stdout: 'y'.repeat(5000) })), tokenizer: tok });
    expect(r).toMatchObject({ finishReason: 'budget', truncated: true, turns: 1, toolCalls: 1 });
    expect(r.lossMask.every((m) => m === 1)).toBe(true);
    expect(r.responseTokenIds.length).toBeLessThan(budget);
  });

  it('truncates a huge tool output to 256 chars in the middle', async () => {
    const r = await runRollout(spec(), { engine: scripted([callTurn('print("é"*5000)'), answerTurn]), tools: tools(() => ({ stdout: 'é'.repeat(1000) })), tokenizer: tok });
    expect(Array.from(r.toolCallRecords[0].responseText)).toHaveLength(256 + '...(truncated)...'.length);
    expectMaskCoversModelTokens(r);
  });

  it('ends with error when the engine aborts', async () => {
    const r = await runRollout(spec(), { engine: scripted([{ text: 'part', finishReason: 'abort' }]), tools: tools(), tokenizer: tok });
    expect(r).toMatchObject({ finishReason: 'error', truncated: false });
  });

  it('ends truncated with context_exceeded when the engine refuses the next turn, keeping what was generated', async () => {
    const engine = scripted([callTurn('print(2+2)')]);
    const refusing: EngineSession = {
      async generate(req) {
        if (req.rid.endsWith(':1')) throw new ContextExceededError('engine e0: /generate answered HTTP 400: context length exceeded', 'e0');
        return engine.generate(req);
      },
    };
    const r = await runRollout(spec(), { engine: refusing, tools: tools(), tokenizer: tok });
    expect(r).toMatchObject({ finishReason: 'context_exceeded', truncated: true, turns: 1, toolCalls: 1, toolErrors: 0 });
    expect(r.responseText).toContain('<tool_response>');
    expectMaskCoversModelTokens(r);
  });

  it('ends with context_exceeded and an empty response when even the first turn does not fit', async () => {
    const refusing: EngineSession = { generate: async () => { throw new ContextExceededError('prompt longer than the context window'); } };
    const r = await runRollout(spec(), { engine: refusing, tools: tools(), tokenizer: tok });
    expect(r).toMatchObject({ finishReason: 'context_exceeded', truncated: true, turns: 0, toolCalls: 0, responseText: '', engineId: '' });
    expect(r.responseTokenIds).toEqual([]);
  });

  it('continues a redone rollout from its recorded turns: no regeneration, no second onTurn, same tool calls', async () => {
    const first = await runRollout(spec(), { engine: scripted([callTurn('print(2+2)'), answerTurn]), tools: tools(), tokenizer: tok });
    // The redo: turn 0 was recorded before the crash; the engine would now sample something else.
    const engine = scripted([answerTurn]);
    const reported: number[] = [];
    const t = tools();
    const redo = await runRollout(spec(), {
      engine, tools: t, tokenizer: tok,
      recorded: (turn) => (turn === 0 ? first.turnRecords[0] : undefined),
      onTurn: (r) => void reported.push(r.turn),
    });
    expect(engine.requests.map((r) => r.rid)).toEqual(['r1:1']);
    expect(reported).toEqual([1]);
    expect(t.calls.map((c) => [c.callId, c.code])).toEqual([[first.toolCallRecords[0].callId, 'print(2+2)']]);
    expect(redo.responseTokenIds).toEqual(first.responseTokenIds);
    expect(redo).toMatchObject({ finishReason: 'answer', turns: 2, toolCalls: 1 });
  });

  it('still propagates other engine errors (the caller retries the rollout)', async () => {
    const broken: EngineSession = { generate: async () => { throw new Error('connection reset'); } };
    await expect(runRollout(spec(), { engine: broken, tools: tools(), tokenizer: tok })).rejects.toThrow('connection reset');
  });

  it('reports turns through onTurn and results through onToolResult in order', async () => {
    const seen: string[] = [];
    await runRollout(spec(), {
      engine: scripted([callTurn('print(1)'), answerTurn]), tools: tools(), tokenizer: tok,
      onTurn: (t) => void seen.push(`turn${t.turn}`),
      onToolResult: (c) => void seen.push(c.callId),
    });
    expect(seen).toEqual(['turn0', 'call:r1:0:0', 'turn1']);
  });

  it('rejects an empty problem and a bad budget naming the field', async () => {
    await expect(runRollout(spec({ problem: ' ' }), { engine: scripted([]), tools: tools(), tokenizer: tok })).rejects.toMatchObject({ code: 'invalid_rollout_request', field: 'problem' });
    await expect(runRollout(spec({ budget: { maxTokens: 0, maxTurns: 1 } }), { engine: scripted([]), tools: tools(), tokenizer: tok })).rejects.toMatchObject({ field: 'budget.maxTokens' });
  });
});

describe('RolloutStateMachine', () => {
  it('refuses calls out of order', () => {
    const sm = new RolloutStateMachine('r', [1, 2], { maxTokens: 10, maxTurns: 2 }, tok);
    expect(() => sm.applyToolResults([])).toThrow(expect.objectContaining({ code: 'rollout_state' }));
    expect(() => sm.outcome()).toThrow(/before the rollout is done/);
    expect(() => sm.applyTurn({ tokenIds: [1], logprobs: [], text: 'a', finishReason: 'stop', engineId: 'e' })).toThrow(expect.objectContaining({ code: 'invalid_turn' }));
  });

  it('cuts a turn from an engine that overran max_new_tokens to the budget', () => {
    const sm = new RolloutStateMachine('r', [1], { maxTokens: 3, maxTurns: 2 }, tok);
    const ids = tok.encode('abcdef');
    sm.applyTurn({ tokenIds: ids, logprobs: ids.map(() => -1), text: 'abcdef', finishReason: 'stop', engineId: 'e' });
    expect(sm.outcome()).toMatchObject({ responseText: 'abc', truncated: true, finishReason: 'budget' });
  });
});

describe('CharTokenizer', () => {
  it('round-trips markers and non-ASCII text, one token per marker', () => {
    const text = `<|im_start|>user\nπ 🙂 <tool_call>{}</tool_call><|im_end|>`;
    expect(tok.decode(tok.encode(text))).toBe(text);
    expect(tok.encode('<|im_end|>')).toHaveLength(1);
  });
});
