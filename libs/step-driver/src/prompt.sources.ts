import { RstarError } from '@rstar/contracts';
import { existsSync, readFileSync } from 'node:fs';
import type { RunConfig } from '@rstar/contracts';
import { renderPrompt } from '@rstar/agent';
import { Tokenizer, deriveSeed, generateTasks } from '@rstar/policy';
import type { Prompt, PromptSource } from './driver';

/** A dataset file that cannot be used; the message names the line/field and the fix. */
export class DatasetError extends RstarError {
  declare readonly field: string;
  constructor(message: string, field: string) {
    super('invalid_dataset', message, field);
  }
}

/** A fixed list of prompts as a {@link PromptSource}. */
export class ListPromptSource implements PromptSource {
  constructor(readonly prompts: readonly Prompt[]) {}
  get size(): number {
    return this.prompts.length;
  }
  get(index: number): Prompt {
    const p = this.prompts[index];
    if (!p) throw new RangeError(`prompt index ${index} outside [0, ${this.prompts.length})`);
    return p;
  }
}

/**
 * Read a JSON-lines dataset: one `{id, problem, answer}` object per line (`question`/`gold` accepted as
 * aliases; a missing id becomes `<file line>`). @throws DatasetError naming the line and field.
 */
export function readJsonlDataset(path: string): Prompt[] {
  if (!existsSync(path)) throw new DatasetError(`dataset ${path} does not exist (give a JSON-lines file of {id, problem, answer})`, 'dataset');
  const out: Prompt[] = [];
  readFileSync(path, 'utf8').split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new DatasetError(`${path}:${i + 1} is not JSON (each line must be one {id, problem, answer} object)`, `line ${i + 1}`);
    }
    const problem = o.problem ?? o.question;
    const answer = o.answer ?? o.gold;
    if (typeof problem !== 'string' || !problem.trim()) throw new DatasetError(`${path}:${i + 1} has no "problem" string`, 'problem');
    if (answer === undefined || answer === null || String(answer).trim() === '') throw new DatasetError(`${path}:${i + 1} has no "answer"`, 'answer');
    out.push({ promptId: String(o.id ?? `line-${i + 1}`), problem, gold: String(answer) });
  });
  if (out.length === 0) throw new DatasetError(`dataset ${path} has no rows`, 'dataset');
  return out;
}

/** Seed salts of the task family's pools: SFT trains on salt 1 and evaluates on 2 (libs/policy runSft); RL draws from 4. */
const RL_POOL_SALT = 4;
const HELD_OUT_SALT = 2;

/** Task-family prompts (`data.source: tasks`) for a seed and salt. */
export function taskPrompts(seed: number, salt: number, n: number): Prompt[] {
  return generateTasks({ seed: deriveSeed(seed, salt), n }).map((t) => ({ promptId: `task:${salt}:${t.id}`, problem: t.problem, gold: t.answer }));
}

/**
 * The RL prompt pool and the held-out set of a run. Tasks: disjoint seeded pools (held-out = the SFT
 * held-out set). File: `data.path` for training and `data.heldOutPath` for held-out, or else the last
 * `heldOutSize` rows of `data.path` are held out. Relative paths resolve against `baseDir`.
 */
export function runPrompts(config: RunConfig, resolvePath: (p: string) => string): { train: ListPromptSource; heldOut: Prompt[] } {
  if (config.data.source === 'tasks') {
    return {
      train: new ListPromptSource(taskPrompts(config.seed, RL_POOL_SALT, config.data.trainSize)),
      heldOut: taskPrompts(config.seed, HELD_OUT_SALT, config.data.heldOutSize),
    };
  }
  const all = readJsonlDataset(resolvePath(config.data.path!));
  if (config.data.heldOutPath) {
    return { train: new ListPromptSource(all.slice(0, config.data.trainSize)), heldOut: readJsonlDataset(resolvePath(config.data.heldOutPath)).slice(0, config.data.heldOutSize) };
  }
  const n = Math.min(config.data.heldOutSize, Math.floor(all.length / 2));
  return { train: new ListPromptSource(all.slice(0, all.length - n).slice(0, config.data.trainSize)), heldOut: all.slice(all.length - n) };
}

/**
 * The prompts the built-in policy can serve: the rendered prompt (compact template, default tokenizer)
 * plus the response budget (model and tool tokens together, docs/design/protocol.md §2) must fit the context window, or
 * a rollout could outgrow the window mid-way and be refused by the engine.
 */
export function promptsFittingContext(prompts: readonly Prompt[], context: number, budget: number): Prompt[] {
  const tok = new Tokenizer();
  return prompts.filter((p) => tok.encode(renderPrompt(p.problem, { compact: true })).length + budget <= context);
}
