import { IM_END, DEFAULT_TOOL_RESPONSE_LIMITS, formatToolResponse, renderPrompt, renderToolCall, renderToolTurn, type ExecResult } from '@rstar/agent';
import { PolicyInputError } from '../errors';
import { Tokenizer } from '../tokenizer';
import type { Task } from './task.generator';

/** A tokenised SFT trace: `lossMask[t]` = 1 for model-written tokens, 0 for prompt and tool-response tokens. */
export interface SftTrace {
  text: string;
  tokenIds: number[];
  lossMask: number[];
  /** Tokens of the prompt (up to and including the assistant's opening `<reason>`). */
  promptLength: number;
}

/** The prompt of a task as the tiny policy sees it (compact template, docs/design/protocol.md §1). */
export function taskPrompt(task: Pick<Task, 'problem'>): string {
  return renderPrompt(task.problem, { compact: true });
}

/** First assistant turn of a trace: a short reason, then one tool call, then end of turn. */
export function toolCallTurn(code: string): string {
  return `Let me compute this with Python.</reason>\n${renderToolCall(code)}${IM_END}`;
}

/** The turn after a failed call: a short reason, then the corrected call (docs/design/protocol.md §1: turns reopen with `<reason>`). */
export function recoveryTurn(code: string): string {
  return `The code failed. Let me fix it.</reason>\n${renderToolCall(code)}${IM_END}`;
}

/** A failed first call of an err-and-recover trace: the buggy program and its REAL execution result. */
export interface FailedCall {
  code: string;
  result: ExecResult;
}

/** Final assistant turn: the tool output copied into `<answer>\boxed{...}</answer>`. */
export function answerTurn(answer: string): string {
  return `</reason>\n<answer>\\boxed{${answer}}</answer>${IM_END}`;
}

/**
 * Build the rStar2-format SFT trace of a task (the "non-reasoning SFT" stage at miniature scale): prompt,
 * reason + one `<tool_call>`, the tool response of the REAL execution `result` (docs/design/protocol.md §3 text), then the
 * answer. With `failed`, the first call is the buggy program, its real error output is the first
 * tool response, and a {@link recoveryTurn} with the reference program follows: a trace that errs and
 * recovers, the kind of correct-but-noisy trajectory GRPO-RoC down-samples (rStar2-Agent §3).
 * Segments are tokenised separately, as the agent loop does.
 * @throws PolicyInputError when the execution did not print the gold answer (a broken program must not
 *   become a training target), or when `failed.result` did not fail (field `failed`).
 */
export function buildSftTrace(task: Task, result: ExecResult, tokenizer: Tokenizer = new Tokenizer(), failed?: FailedCall): SftTrace {
  const out = result.stdout.trim();
  if (result.status !== 'ok' || out !== task.answer) {
    throw new PolicyInputError(`task ${task.id}: execution gave status ${result.status}, stdout "${out.slice(0, 40)}", expected "${task.answer}" (the reference program is wrong or the sandbox failed)`, 'result');
  }
  if (failed && failed.result.status === 'ok') {
    throw new PolicyInputError(`task ${task.id}: the buggy program "${failed.code}" ran without error (stdout "${failed.result.stdout.trim().slice(0, 40)}"); an err-and-recover trace needs a call that fails`, 'failed');
  }
  const segs: [string, number][] = [
    [taskPrompt(task), 0],
    ...(failed
      ? ([
          [toolCallTurn(failed.code), 1],
          [renderToolTurn([formatToolResponse(failed.result)]), 0],
          [recoveryTurn(task.code), 1],
        ] as [string, number][])
      : ([[toolCallTurn(task.code), 1]] as [string, number][])),
    [renderToolTurn([formatToolResponse(result)]), 0],
    [answerTurn(out), 1],
  ];
  return encodeSegments(segs, tokenizer);
}

/**
 * Build the SFT trace of a task whose ONE tool call prints the correct result and then fails
 * (kind `trailing-check`): prompt, reason + the noisy call, its REAL tool response (stdout with the answer,
 * then the traceback), then the answer copied from stdout. Erroneous (status not `ok`, docs/design/protocol.md §3) yet
 * correct: the trajectory GRPO-RoC down-samples among positive rollouts and plain GRPO reinforces as much
 * as a clean one (rStar2-Agent §3), with no recovery turn for a tiny policy to get wrong.
 * @throws PolicyInputError (field `noisy`) when the call did not fail, when its stdout is not the gold
 *   answer, or when the tool-response text as the model sees it (cut to 256 chars, first 128 kept) no
 *   longer shows the answer.
 */
export function buildNoisyCorrectTrace(task: Task, noisy: FailedCall, tokenizer: Tokenizer = new Tokenizer()): SftTrace {
  const out = noisy.result.stdout.trim();
  if (noisy.result.status === 'ok' || out !== task.answer) {
    throw new PolicyInputError(`task ${task.id}: the noisy call "${noisy.code}" gave status ${noisy.result.status}, stdout "${out.slice(0, 40)}"; it must print "${task.answer}" and then fail`, 'noisy');
  }
  const response = formatToolResponse(noisy.result);
  if (!response.startsWith(`stdout: ${out}\n`) || Array.from(`stdout: ${out}`).length > DEFAULT_TOOL_RESPONSE_LIMITS.headChars) {
    throw new PolicyInputError(`task ${task.id}: the tool response of "${noisy.code}" does not show the answer in its first ${DEFAULT_TOOL_RESPONSE_LIMITS.headChars} chars: "${response.slice(0, 60)}"`, 'noisy');
  }
  const segs: [string, number][] = [
    [taskPrompt(task), 0],
    [toolCallTurn(noisy.code), 1],
    [renderToolTurn([response]), 0],
    [answerTurn(out), 1],
  ];
  return encodeSegments(segs, tokenizer);
}

/** Tokenize `[text, lossMask]` segments (the first is the prompt) into one trace: mask 1 = model tokens. */
function encodeSegments(segs: readonly [string, number][], tokenizer: Tokenizer): SftTrace {
  const tokenIds: number[] = [];
  const lossMask: number[] = [];
  for (const [text, m] of segs) {
    const ids = tokenizer.encode(text);
    tokenIds.push(...ids);
    lossMask.push(...ids.map(() => m));
  }
  return { text: segs.map((s) => s[0]).join(''), tokenIds, lossMask, promptLength: tokenizer.encode(segs[0][0]).length };
}
