import { runRollout, type ExecRequest, type ExecResult, type Tokenizer, type ToolExecutor } from '@rstar/agent';
import { grade } from '@rstar/grader';
import type { Prompt } from '@rstar/step-driver';
import type { EngineAdapter } from '@rstar/engines';
import type { SandboxPool } from '@rstar/sandbox';

/** Options of {@link evaluatePassAt1}. */
export interface PassAt1Options {
  /** Samples per prompt (k); pass@1 is the mean correctness over all k samples of all prompts. */
  samples: number;
  temperature: number;
  maxTurns: number;
  maxResponseTokens: number;
  /** Seed of the sampling seeds (only matters for temperature > 0). */
  seed?: number;
  /** Render prompts without the system turn (the tiny built-in policy). */
  compactPrompt?: boolean;
  toolTimeoutMs?: number;
  toolMemoryMb?: number;
  /** Called after each finished rollout. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Rollouts in flight at once (default 256). Each is an HTTP request to the engine; an engine decodes
   * at most its batch (64 for the built-in one) and queues the rest, so more in flight buys nothing and
   * thousands of sockets opened at once on a busy host overflow the server's accept queue (ECONNRESET).
   */
  maxInFlight?: number;
}

/** The result of a pass@1 evaluation. */
export interface PassAt1Report {
  /** Mean reward over prompts x samples, in [0, 1]. */
  passAt1: number;
  prompts: number;
  samples: number;
  /** Share of rollouts that made at least one tool call. */
  toolUse: number;
  /** Share of tool calls that failed (status not ok). */
  toolErrorRatio: number;
  /** Mean response tokens (model + tool) per rollout. */
  meanResponseTokens: number;
  /** Correct samples of each prompt, in prompt order (for paired comparisons: {@link pairedGain}). */
  correctPerPrompt: number[];
  /** A few transcripts for inspection. */
  examples: { promptId: string; gold: string; extracted: string | null; correct: boolean; text: string }[];
}

/** {@link ToolExecutor} straight on a sandbox pool (evaluation needs no event log). */
export function poolToolExecutor(pool: SandboxPool, outputChars?: number): ToolExecutor {
  return {
    execute: (r: ExecRequest): Promise<ExecResult> =>
      pool.execute({ code: r.code, input: r.input, timeoutMs: r.timeoutMs, memoryMb: r.memoryMb, session: r.session ?? undefined, outputChars }),
  };
}

/**
 * pass@1 of a policy behind an engine (docs/design/protocol.md §4 reward): every prompt is rolled out `samples` times
 * with the real agent loop (tool calls executed in the sandbox), graded by libs/grader; truncated
 * rollouts score 0. Up to `maxInFlight` rollouts are in flight at once (the engine batches them); each
 * keeps its own sampling seed, so the order they start in does not change what they sample.
 */
export async function evaluatePassAt1(
  engine: EngineAdapter, tokenizer: Tokenizer, tools: ToolExecutor, prompts: readonly Prompt[], opts: PassAt1Options,
): Promise<PassAt1Report> {
  if (!(opts.samples >= 1)) throw new RangeError(`samples must be >= 1, got ${opts.samples}`);
  const total = prompts.length * opts.samples;
  let done = 0;
  const session = { generate: async (req: Parameters<EngineAdapter['generate']>[0]) => ({ ...(await engine.generate(req)), engineId: engine.id }) };
  const jobs = prompts.flatMap((p, i) => Array.from({ length: opts.samples }, (_, k) => ({ p, i, k })));
  const rows: Array<{ p: Prompt; r: Awaited<ReturnType<typeof runRollout>>; correct: boolean; extracted: string | null }> = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const n = next++;
      const { p, i, k } = jobs[n];
      const r = await runRollout(
        {
          rolloutId: `eval:${p.promptId}:${k}`, problem: p.problem, compactPrompt: opts.compactPrompt,
          sampling: { temperature: opts.temperature, topP: 1, seed: ((opts.seed ?? 0) * 1_000_003 + i * 1009 + k) >>> 1 },
          budget: { maxTokens: opts.maxResponseTokens, maxTurns: opts.maxTurns },
        },
        { engine: session, tools, tokenizer },
        { toolTimeoutMs: opts.toolTimeoutMs, toolMemoryMb: opts.toolMemoryMb },
      );
      const v = grade(r.responseText, p.gold, { problem: p.problem });
      opts.onProgress?.(++done, total);
      rows[n] = { p, r, correct: v.correct && !r.truncated, extracted: v.extracted };
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.maxInFlight ?? 256, jobs.length)) }, worker));
  const calls = rows.reduce((a, x) => a + x.r.toolCalls, 0);
  const errors = rows.reduce((a, x) => a + x.r.toolErrors, 0);
  return {
    passAt1: rows.filter((x) => x.correct).length / Math.max(1, rows.length),
    prompts: prompts.length,
    samples: opts.samples,
    toolUse: rows.filter((x) => x.r.toolCalls > 0).length / Math.max(1, rows.length),
    toolErrorRatio: calls ? errors / calls : 0,
    meanResponseTokens: rows.reduce((a, x) => a + x.r.responseTokenIds.length, 0) / Math.max(1, rows.length),
    correctPerPrompt: prompts.map((_, i) => rows.slice(i * opts.samples, (i + 1) * opts.samples).filter((x) => x.correct).length),
    examples: rows.slice(0, 4).map((x) => ({ promptId: x.p.promptId, gold: x.p.gold, extracted: x.extracted, correct: x.correct, text: x.r.responseText })),
  };
}

/**
 * pass@1 gain of `after` over `before` on the same prompts and samples, with its paired standard error:
 * the standard deviation of the per-prompt differences of mean correctness over sqrt(prompts). Pairing
 * removes the prompts' own difficulty from the error (both sides share the prompts and, with the same
 * seed, the sampling seeds).
 * @throws RangeError when the two reports cover different prompts or sample counts
 */
export function pairedGain(before: PassAt1Report, after: PassAt1Report): { gain: number; se: number } {
  const n = before.correctPerPrompt.length;
  if (n !== after.correctPerPrompt.length || before.samples !== after.samples || n < 2) {
    throw new RangeError(`pairedGain needs reports of the same >= 2 prompts and samples (got ${n} x ${before.samples} and ${after.correctPerPrompt.length} x ${after.samples})`);
  }
  const d = before.correctPerPrompt.map((b, i) => (after.correctPerPrompt[i]! - b) / before.samples);
  const mean = d.reduce((a, x) => a + x, 0) / n;
  const variance = d.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1);
  return { gain: mean, se: Math.sqrt(variance / n) };
}
