import { describe, expect, it } from 'vitest';
import { JUPYTER_TOOL, PYTHON_TOOL, PYTHON_TOOL_ALIAS, renderToolCall } from './template';
import { decodeFailureText, parseToolCalls, parseTurn } from './tool-call.parser';

const call = (obj: unknown): string => `<tool_call>\n${JSON.stringify(obj)}\n</tool_call>`;

describe('parseTurn', () => {
  it('decodes a python call rendered by the template, with stdin', () => {
    const [c] = parseToolCalls(`let me compute ${renderToolCall('print(input())', '7')} done`);
    expect(c).toMatchObject({ ok: true, index: 0, tool: PYTHON_TOOL, code: 'print(input())', input: '7' });
  });

  it('maps the paper alias to the canonical name and accepts jupyter_code without input', () => {
    const calls = parseToolCalls(call({ name: PYTHON_TOOL_ALIAS, arguments: { code: 'x=1' } }) + call({ name: JUPYTER_TOOL, arguments: { code: 'x' } }));
    expect(calls.map((c) => (c.ok ? [c.tool, c.input] : c.reason))).toEqual([
      [PYTHON_TOOL, ''],
      [JUPYTER_TOOL, ''],
    ]);
  });

  it('returns several calls of one turn in order with their indices', () => {
    const text = call({ name: PYTHON_TOOL, arguments: { code: 'a', input: '' } }) + ' and ' + call({ name: PYTHON_TOOL, arguments: { code: 'b', input: '' } });
    expect(parseToolCalls(text).map((c) => [c.index, c.ok && c.code])).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
  });

  it('accepts arguments written as a JSON string', () => {
    const [c] = parseToolCalls(call({ name: PYTHON_TOOL, arguments: JSON.stringify({ code: 'print(1)', input: '' }) }));
    expect(c).toMatchObject({ ok: true, code: 'print(1)' });
  });

  it.each([
    ['invalid JSON', '<tool_call>{"name": "python_code_with_standard_io", "arguments": {"code": </tool_call>', /^invalid JSON/],
    ['not an object', '<tool_call>[1,2]</tool_call>', /expected a JSON object/],
    ['unknown tool', call({ name: 'bash', arguments: { code: 'ls' } }), /unknown tool "bash"/],
    ['missing name', call({ arguments: { code: 'x' } }), /missing "name"/],
    ['missing code', call({ name: PYTHON_TOOL, arguments: { input: '' } }), /missing "code"/],
    ['empty code', call({ name: PYTHON_TOOL, arguments: { code: '  \n ', input: '' } }), /"code" is empty/],
    ['non-string input', call({ name: PYTHON_TOOL, arguments: { code: 'x', input: 3 } }), /"input" must be a string/],
    ['missing arguments', call({ name: PYTHON_TOOL }), /missing "arguments"/],
  ])('turns %s into a decode failure', (_label, text, reason) => {
    const [c] = parseToolCalls(text);
    expect(c.ok).toBe(false);
    if (!c.ok) {
      expect(c.reason).toMatch(reason);
      expect(decodeFailureText(c.reason)).toMatch(/^Failed to decode tool call: /);
    }
  });

  it('matches non-greedily: a nested open tag is one failed call and a format violation', () => {
    const inner = call({ name: PYTHON_TOOL, arguments: { code: 'x', input: '' } });
    const p = parseTurn(`<tool_call>${inner}</tool_call>`);
    expect(p.calls).toHaveLength(1);
    expect(p.calls[0]).toMatchObject({ ok: false, reason: 'nested <tool_call> tag' });
    // the nested block plus the stray closing tag
    expect(p.formatViolations).toBe(2);
  });

  it('does not treat an unclosed tool call as a call and counts it as a format violation', () => {
    const p = parseTurn('<tool_call>\n{"name": "python_code_with_standard_io", "arguments": {"code": "1"}}');
    expect(p.calls).toEqual([]);
    expect(p.formatViolations).toBe(1);
  });

  it('counts complete answer blocks and unclosed ones', () => {
    expect(parseTurn('<answer>\\boxed{1}</answer> then <answer>\\boxed{2}</answer>')).toMatchObject({ answerBlocks: 2, formatViolations: 0 });
    expect(parseTurn('<answer>\\boxed{1}</answer><answer>\\boxed{2}')).toMatchObject({ answerBlocks: 1, formatViolations: 1 });
  });

  it('keeps non-ASCII code and input intact', () => {
    const [c] = parseToolCalls(call({ name: PYTHON_TOOL, arguments: { code: 'print("π≈3.14 🙂")', input: 'ü' } }));
    expect(c).toMatchObject({ ok: true, code: 'print("π≈3.14 🙂")', input: 'ü' });
  });

  it('finds no call in plain text', () => {
    expect(parseTurn('The answer is <answer>\\boxed{4}</answer>')).toEqual({ calls: [], answerBlocks: 1, formatViolations: 0 });
  });
});
