/**
 * The rStar2-Agent conversation template (docs/design/protocol.md §1), ChatML-style. These strings are the wire
 * format between the policy and the agent loop; the built-in tokenizer gives each marker one token.
 */
export const IM_START = '<|im_start|>';
export const IM_END = '<|im_end|>';
export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';
export const TOOL_RESPONSE_OPEN = '<tool_response>';
export const TOOL_RESPONSE_CLOSE = '</tool_response>';
export const REASON_OPEN = '<reason>';
export const REASON_CLOSE = '</reason>';
export const ANSWER_OPEN = '<answer>';
export const ANSWER_CLOSE = '</answer>';

/** Tool names: the released code's name, the paper's alias, and the stateful flavour. */
export const PYTHON_TOOL = 'python_code_with_standard_io';
export const PYTHON_TOOL_ALIAS = 'execute_python_code_with_standard_io';
export const JUPYTER_TOOL = 'jupyter_code';

/** Every special marker of the template, longest first (for greedy tokenisation). */
export const SPECIAL_MARKERS: readonly string[] = [
  IM_START, IM_END, TOOL_CALL_OPEN, TOOL_CALL_CLOSE, TOOL_RESPONSE_OPEN, TOOL_RESPONSE_CLOSE,
  REASON_OPEN, REASON_CLOSE, ANSWER_OPEN, ANSWER_CLOSE,
].sort((a, b) => b.length - a.length);

const TOOL_SIGNATURES: Record<string, object> = {
  [PYTHON_TOOL]: {
    name: PYTHON_TOOL,
    description: 'Execute Python code; stdout and stderr are returned.',
    parameters: {
      type: 'object',
      properties: { code: { type: 'string' }, input: { type: 'string', description: 'stdin' } },
      required: ['code', 'input'],
    },
  },
  [JUPYTER_TOOL]: {
    name: JUPYTER_TOOL,
    description: 'Execute Python code in a stateful session; variables persist across calls.',
    parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
  },
};

/** The JSON signature of a tool as the `# Tools` section lists it (a bare `{name}` for an unknown tool). */
export function toolSignature(tool: string): object {
  return TOOL_SIGNATURES[tool] ?? { name: tool };
}

/** The system prompt: reasoning/answer tags and the `# Tools` section (docs/design/protocol.md §1). */
export function systemPrompt(tools: readonly string[] = [PYTHON_TOOL]): string {
  const sigs = tools.map((t) => JSON.stringify(toolSignature(t))).join('\n');
  return (
    'You are a helpful assistant. You reason inside <reason> </reason> and give the final answer inside ' +
    '<answer> </answer>.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    `<tools>\n${sigs}\n</tools>\n\nFor each function call, return a json object with function name and ` +
    'arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
  );
}

/** The user turn: the answer instruction, then the problem. */
export function userPrompt(problem: string): string {
  return `Put the final answer inside <answer> </answer> as \\boxed{}.\n${problem}`;
}

/**
 * Full prompt text up to the start of generation: system, user, then the assistant opener followed by
 * `<reason>` (docs/design/protocol.md §1). `compact` drops the long system text, used by the tiny built-in policy whose
 * context is a few hundred tokens (the system prompt carries no information a fixed small model uses).
 */
export function renderPrompt(problem: string, opts: { tools?: readonly string[]; compact?: boolean } = {}): string {
  const sys = opts.compact ? '' : `${IM_START}system\n${systemPrompt(opts.tools)}${IM_END}\n`;
  const user = opts.compact ? problem : userPrompt(problem);
  return `${sys}${IM_START}user\n${user}${IM_END}\n${IM_START}assistant\n${REASON_OPEN}`;
}

/** Text appended after an assistant turn that made tool calls: the tool results as one user turn, then a new assistant opener. */
export function renderToolTurn(responses: readonly string[]): string {
  const body = responses.map((r) => `${TOOL_RESPONSE_OPEN}\n${r}\n${TOOL_RESPONSE_CLOSE}`).join('\n');
  return `\n${IM_START}user\n${body}${IM_END}\n${IM_START}assistant\n${REASON_OPEN}`;
}

/** Render one tool call as the model should write it. */
export function renderToolCall(code: string, input = '', tool: string = PYTHON_TOOL): string {
  const args = tool === JUPYTER_TOOL ? { code } : { code, input };
  return `${TOOL_CALL_OPEN}\n${JSON.stringify({ name: tool, arguments: args })}\n${TOOL_CALL_CLOSE}`;
}
