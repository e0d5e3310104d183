import { formatToolResponse, parseTurn, renderToolTurn } from '@rstar/agent';
import type { CodeExecutor } from '../code.executor';
import type { PolicyModel } from '../policy.model';
import { taskPrompt } from './sft-trace.builder';
import type { Task } from './task.generator';

/** Held-out scores of a policy on the task family. Fractions are over `n` prompts. */
export interface HeldOutReport {
  n: number;
  /** First turn ended at end-of-turn with a decodable `<tool_call>` (known tool, JSON, non-empty code). */
  toolFormat: number;
  /** Final `\boxed{}` integer equals the gold answer, with the model's first tool call executed for real. */
  correct: number;
  /** A few decoded transcripts for inspection. */
  samples: { problem: string; gold: string; text: string; correct: boolean }[];
}

/** The content of the last `\boxed{...}` of a text (brace-balanced), or null. */
export function lastBoxed(text: string): string | null {
  const i = text.lastIndexOf('\\boxed{');
  if (i < 0) return null;
  let depth = 0;
  for (let j = i + 7; j < text.length; j++) {
    if (text[j] === '{') depth++;
    else if (text[j] === '}') {
      if (depth === 0) return text.slice(i + 7, j);
      depth--;
    }
  }
  return null;
}

/**
 * Greedy two-turn evaluation (the miniature agent loop): generate to end of turn, execute the FIRST tool call
 * through `execute`, append the tool turn (docs/design/protocol.md §1, §3), generate again, and grade the boxed integer by
 * exact match with the gold answer. Runs in batches of `batchSize` prompts.
 */
export async function evaluateHeldOut(
  model: PolicyModel, tasks: Task[], execute: CodeExecutor, opts: { batchSize?: number; maxTurnTokens?: number; samples?: number } = {},
): Promise<HeldOutReport> {
  const tok = model.tokenizer;
  const bs = opts.batchSize ?? 64;
  const maxTurn = opts.maxTurnTokens ?? 96;
  let formatOk = 0;
  let correct = 0;
  const samples: HeldOutReport['samples'] = [];
  for (let i = 0; i < tasks.length; i += bs) {
    const chunk = tasks.slice(i, i + bs);
    const prompts = chunk.map((t) => tok.encode(taskPrompt(t)));
    const first = await model.generate(prompts, prompts.map((p) => ({ temperature: 0, maxNewTokens: Math.min(maxTurn, model.config.context - p.length) })));
    const texts = first.map((g) => tok.decode(g.tokenIds));
    const contexts: (number[] | null)[] = await Promise.all(
      chunk.map(async (_, b) => {
        const parse = parseTurn(texts[b]);
        const call = parse.calls[0];
        if (!call || !call.ok || first[b].finishReason !== 'stop') return null;
        formatOk++;
        const res = await execute({ code: call.code, input: call.input });
        const ctx = [...prompts[b], ...first[b].tokenIds, ...tok.encode(renderToolTurn([formatToolResponse(res)]))];
        return ctx.length < model.config.context ? ctx : null;
      }),
    );
    const rows = contexts.map((c, b) => (c ? b : -1)).filter((b) => b >= 0);
    const second = rows.length
      ? await model.generate(rows.map((b) => contexts[b]!), rows.map((b) => ({ temperature: 0, maxNewTokens: Math.min(maxTurn, model.config.context - contexts[b]!.length) })))
      : [];
    chunk.forEach((task, b) => {
      const k = rows.indexOf(b);
      const full = k >= 0 ? tok.decode(contexts[b]!.slice(prompts[b].length)) + tok.decode(second[k].tokenIds) : texts[b];
      const ans = lastBoxed(full);
      const ok = ans !== null && ans.trim() === task.answer;
      if (ok) correct++;
      if (samples.length < (opts.samples ?? 4)) samples.push({ problem: task.problem, gold: task.answer, text: full, correct: ok });
    });
  }
  return { n: tasks.length, toolFormat: formatOk / tasks.length, correct: correct / tasks.length, samples };
}
