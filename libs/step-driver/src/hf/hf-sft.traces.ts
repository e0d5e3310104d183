import { formatToolResponse, IM_END, type ExecResult, type PromptRenderer, type Tokenizer } from '@rstar/agent';
import { answerTurn, toolCallTurn, type Task } from '@rstar/policy';
import { RunRefusedError } from '../run.errors';

/** One SFT sequence in a model's own tokens: 1 in `lossMask` marks the model-written tokens. */
export interface HfSftTrace {
  tokenIds: number[];
  lossMask: number[];
  promptLength: number;
}

/** What building a trace needs: the model's tokenizer with its template and end-of-turn token. */
export interface HfTraceTokenizer extends Tokenizer {
  readonly renderer: PromptRenderer;
  readonly eosText: string;
}

/**
 * The rStar2-format SFT trace of a task for a Hugging Face policy (the non-reasoning SFT stage of the
 * recipe, docs/design/protocol.md §6): the prompt rendered with the model's chat template, an assistant turn with one
 * `<tool_call>`, the REAL tool response of `result` as the template's tool turn, then the answer copied from
 * stdout into `\boxed{}`. Each segment is tokenized on its own, exactly as the agent loop appends them
 * (prompt ids once, tool-turn ids appended), so SFT and rollouts see the same token boundaries.
 * @throws RunRefusedError when the execution did not print the gold answer (the sandbox failed).
 */
export function buildHfSftTrace(task: Task, result: ExecResult, tok: HfTraceTokenizer, compact: boolean): HfSftTrace {
  const out = result.stdout.trim();
  if (result.status !== 'ok' || out !== task.answer) {
    throw new RunRefusedError(`SFT trace of task ${task.id}: its program gave status ${result.status}, stdout "${out.slice(0, 40)}", expected "${task.answer}" (is the sandbox working?)`, 'sft');
  }
  // The traces end turns with the model's own end-of-turn text (ChatML's <|im_end|> for Qwen2-style models).
  const eot = (s: string) => (s.endsWith(IM_END) ? s.slice(0, -IM_END.length) + tok.eosText : s);
  const segs: Array<[string, 0 | 1]> = [
    [tok.renderer.renderPrompt(task.problem, { compact }), 0],
    [eot(toolCallTurn(task.code)), 1],
    [tok.renderer.renderToolTurn([formatToolResponse(result)]), 0],
    [eot(answerTurn(out)), 1],
  ];
  const tokenIds: number[] = [];
  const lossMask: number[] = [];
  let promptLength = 0;
  segs.forEach(([text, m], i) => {
    const ids = tok.encode(text);
    if (i === 0) promptLength = ids.length;
    tokenIds.push(...ids);
    for (let k = 0; k < ids.length; k++) lossMask.push(m);
  });
  return { tokenIds, lossMask, promptLength };
}
