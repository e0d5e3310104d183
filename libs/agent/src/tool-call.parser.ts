import {
  ANSWER_CLOSE,
  ANSWER_OPEN,
  JUPYTER_TOOL,
  PYTHON_TOOL,
  PYTHON_TOOL_ALIAS,
  TOOL_CALL_CLOSE,
  TOOL_CALL_OPEN,
} from './template';

/** A tool call whose JSON decoded into a known tool with its arguments. */
export interface DecodedToolCall {
  ok: true;
  /** Position among the calls of the turn (0-based). */
  index: number;
  /** Canonical tool name: the paper's alias is mapped to {@link PYTHON_TOOL}. */
  tool: typeof PYTHON_TOOL | typeof JUPYTER_TOOL;
  code: string;
  input: string;
  /** The text between the tags, as the model wrote it. */
  raw: string;
}

/** A `<tool_call>` block that could not be decoded; it gets a `Failed to decode tool call: ...` response. */
export interface FailedToolCall {
  ok: false;
  index: number;
  reason: string;
  raw: string;
}

export type ParsedToolCall = DecodedToolCall | FailedToolCall;

/** The tool calls and tag-structure findings of one assistant turn. */
export interface TurnParse {
  calls: ParsedToolCall[];
  /** Complete `<answer>...</answer>` blocks in the turn. */
  answerBlocks: number;
  /** Malformed tag structures: an unclosed `<tool_call>`, a nested `<tool_call>`, an unclosed `<answer>`. */
  formatViolations: number;
}

const CALL_RE = new RegExp(`${escape(TOOL_CALL_OPEN)}([\\s\\S]*?)${escape(TOOL_CALL_CLOSE)}`, 'g');
const ANSWER_RE = new RegExp(`${escape(ANSWER_OPEN)}[\\s\\S]*?${escape(ANSWER_CLOSE)}`, 'g');

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function count(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** The message of a decode failure as the model sees it (docs/design/protocol.md §2). */
export function decodeFailureText(reason: string): string {
  return `Failed to decode tool call: ${reason}`;
}

function decodeBody(raw: string, index: number): ParsedToolCall {
  const fail = (reason: string): FailedToolCall => ({ ok: false, index, reason, raw });
  const body = raw.trim();
  if (body.includes(TOOL_CALL_OPEN)) return fail('nested <tool_call> tag');
  let obj: unknown;
  try {
    obj = JSON.parse(body);
  } catch (e) {
    return fail(`invalid JSON (${(e as Error).message})`);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return fail('expected a JSON object {"name": ..., "arguments": {...}}');
  const { name } = obj as { name?: unknown };
  let args = (obj as { arguments?: unknown }).arguments;
  if (typeof name !== 'string') return fail('missing "name" (a string)');
  if (name !== PYTHON_TOOL && name !== PYTHON_TOOL_ALIAS && name !== JUPYTER_TOOL) {
    return fail(`unknown tool "${name}" (known: ${PYTHON_TOOL}, ${JUPYTER_TOOL})`);
  }
  // Some models write the arguments as a JSON-encoded string; accept it when it decodes to an object.
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return fail('"arguments" is a string that is not a JSON object');
    }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return fail('missing "arguments" (an object)');
  const { code, input } = args as { code?: unknown; input?: unknown };
  if (typeof code !== 'string') return fail('missing "code" (a string) in "arguments"');
  if (code.trim() === '') return fail('"code" is empty');
  if (input !== undefined && input !== null && typeof input !== 'string') return fail('"input" must be a string');
  const tool = name === JUPYTER_TOOL ? JUPYTER_TOOL : PYTHON_TOOL;
  return { ok: true, index, tool, code, input: tool === JUPYTER_TOOL ? '' : ((input as string | undefined) ?? ''), raw };
}

/**
 * Parse one assistant turn (docs/design/protocol.md §2): every `<tool_call>...</tool_call>` block, matched
 * non-greedily, in order; each body is `{"name": tool, "arguments": {"code": ..., "input": ...}}`.
 * Never throws: a block that does not decode becomes a {@link FailedToolCall}. A `<tool_call>` without
 * its closing tag is not a call (the turn ended inside it) and counts as a format violation.
 */
export function parseTurn(text: string): TurnParse {
  const calls: ParsedToolCall[] = [];
  let formatViolations = 0;
  for (const m of text.matchAll(CALL_RE)) {
    const parsed = decodeBody(m[1], calls.length);
    if (!parsed.ok && parsed.reason.startsWith('nested')) formatViolations++;
    calls.push(parsed);
  }
  const opens = count(text, TOOL_CALL_OPEN);
  const closes = count(text, TOOL_CALL_CLOSE);
  // Opens not consumed by a matched block (nested opens are already counted above) are unclosed calls.
  const nestedOpens = calls.reduce((n, c) => n + count(c.raw, TOOL_CALL_OPEN), 0);
  if (opens - calls.length - nestedOpens > 0) formatViolations += opens - calls.length - nestedOpens;
  if (closes > calls.length) formatViolations += closes - calls.length;
  const answerBlocks = (text.match(ANSWER_RE) ?? []).length;
  if (count(text, ANSWER_OPEN) > answerBlocks) formatViolations += count(text, ANSWER_OPEN) - answerBlocks;
  return { calls, answerBlocks, formatViolations };
}

/** Shorthand: the tool calls of a turn (see {@link parseTurn}). */
export function parseToolCalls(text: string): ParsedToolCall[] {
  return parseTurn(text).calls;
}
