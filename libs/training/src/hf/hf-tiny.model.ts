import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { formatToolResponse, renderToolCall, userPrompt, IM_END, IM_START } from '@rstar/agent';
import { deriveSeed, generateTasks, answerTurn } from '@rstar/policy';
import { ensureTinyModel, type TinyModelOptions } from '@rstar/workers';

/** Settings of the hf-tiny model (make-tiny flags; the tokenizer is also trained on the task family's text). */
export type HfTinySettings = Omit<TinyModelOptions, 'out' | 'corpus' | 'python'>;

/**
 * The hf-tiny architecture of the `hf-tiny` preset: a 2-layer Qwen2, d_model 64, 4 heads, MLP 256 (~0.17M
 * parameters with its 577-token vocabulary). Why this small: on the same SFT traces and optimizer (lr 3e-3,
 * batch 32), the former 4-layer d_model-128 shape was still at ~0.39-0.41 after 250 updates, the plateau of a
 * model that has learnt the format but copies no digit (from the problem into the code, or from the tool
 * output into `\boxed{}`), and ~3x slower per update; this shape leaves that plateau after ~250 updates and
 * ends near 0.05 after 400 (README, "Training a Hugging Face model").
 */
export const HF_TINY_SETTINGS: HfTinySettings = { hiddenSize: 64, layers: 2, heads: 4, kvHeads: 4, intermediateSize: 256, vocabSize: 2048, seed: 0 };

/**
 * Text of the task family in the rStar2 format (user turn, tool call, tool response, answer), one text per
 * text, for training the hf-tiny tokenizer (make-tiny reads one text per line, so each line is one): in-domain text gives its phrases single tokens, so sequences
 * stay short (digits stay one token each: Qwen2's pre-tokenizer splits them). Drawn from its own seed,
 * disjoint from the run's pools.
 */
export function taskFamilyCorpus(n = 3000): string[] {
  return generateTasks({ seed: deriveSeed(97, 13), n }).flatMap((t) => [
    `${IM_START}user\n${userPrompt(t.problem)}${IM_END}`,
    `${IM_START}assistant\n<reason>Let me compute this with Python.</reason>\n${renderToolCall(t.code)}${IM_END}`,
    `${IM_START}user\n<tool_response>\n${formatToolResponse({ status: 'ok', stdout: `${t.answer}\n`, stderr: '', exitCode: 0, signal: null, wallMs: 10, cpuMs: 9, truncated: false })}\n</tool_response>${IM_END}`,
    `${IM_START}assistant\n<reason>${answerTurn(t.answer)}`,
  ]);
}

/**
 * Build (once) the hf-tiny model directory under `cacheDir`: `python -m rstar_trainer make-tiny` with
 * {@link HF_TINY_SETTINGS} (or `settings`) and a tokenizer trained on {@link taskFamilyCorpus} plus
 * make-tiny's own corpus. Offline, seeded: every machine builds the same model. Returns the directory.
 */
export async function ensureHfTinyModel(cacheDir: string, settings: HfTinySettings = HF_TINY_SETTINGS): Promise<string> {
  const dir = resolve(cacheDir);
  mkdirSync(dir, { recursive: true });
  const corpus = join(dir, 'hf-tiny-corpus.txt');
  writeFileSync(corpus, taskFamilyCorpus().join('\n') + '\n');
  return ensureTinyModel(dir, { ...settings, corpus: [corpus] });
}
