import { resolve } from 'node:path';
import { createEngines, startBuiltinEngine } from '@rstar/engines';
import { SandboxPool } from '@rstar/sandbox';
import { evaluatePassAt1, poolToolExecutor, type PassAt1Report } from './pass-at-1.evaluator';
import { promptsFittingContext, readJsonlDataset, taskPrompts } from '@rstar/step-driver';

/** Options of {@link evaluateCheckpoint}. */
export interface CheckpointEvalOptions {
  /** A built-in policy checkpoint directory. */
  checkpoint: string;
  /** A JSON-lines dataset path, or `tasks` for the held-out task family. */
  dataset: string;
  samples?: number;
  temperature?: number;
  maxTurns?: number;
  maxResponseTokens?: number;
  /** Use only the first `limit` rows. */
  limit?: number;
  /** Task family seed (with `dataset: tasks`): the held-out set of a run with this seed. Default 1. */
  seed?: number;
  onProgress?: (done: number, total: number) => void;
}

/**
 * `rstar eval`: pass@1 (mean over `samples` per prompt) of a checkpoint on a dataset, with rollouts run for
 * real (built-in engine over the SGLang adapter, tool calls in the sandbox, graded by libs/grader).
 * Temperature defaults to 0 with one sample, else 1. Prompts that do not fit the model's context are skipped
 * (`skipped`).
 */
export async function evaluateCheckpoint(o: CheckpointEvalOptions): Promise<PassAt1Report & { checkpoint: string; dataset: string; skipped: number }> {
  const samples = o.samples ?? 1;
  const all = o.dataset === 'tasks' ? taskPrompts(o.seed ?? 1, 2, o.limit ?? 64) : readJsonlDataset(resolve(o.dataset)).slice(0, o.limit);
  const engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: resolve(o.checkpoint), kvCapacityTokens: 1 << 20 });
  const model = engine.model;
  const sandbox = new SandboxPool({ workers: 2 });
  await sandbox.start();
  try {
    const [adapter] = createEngines([`builtin=${engine.url}`]);
    const maxResponseTokens = o.maxResponseTokens ?? Math.min(124, Math.floor(model.config.context * 0.75));
    const prompts = promptsFittingContext(all, model.config.context, maxResponseTokens);
    if (prompts.length === 0) throw new RangeError(`no prompt of ${o.dataset} fits the model context of ${model.config.context} tokens`);
    const r = await evaluatePassAt1(adapter, model.tokenizer, poolToolExecutor(sandbox), prompts, {
      samples, temperature: o.temperature ?? (samples > 1 ? 1 : 0), maxTurns: o.maxTurns ?? 4, maxResponseTokens, seed: o.seed ?? 1, compactPrompt: true, onProgress: o.onProgress,
    });
    return { ...r, checkpoint: resolve(o.checkpoint), dataset: o.dataset, skipped: all.length - prompts.length };
  } finally {
    await engine.close();
    await sandbox.close();
  }
}
