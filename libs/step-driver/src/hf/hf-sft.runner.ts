import { createHash } from 'node:crypto';
import type { RunConfig } from '@rstar/contracts';
import type { TrainingBatch } from '@rstar/grpo';
import { Rng, deriveSeed, generateTasks, type CodeExecutor } from '@rstar/policy';
import { RunRefusedError } from '../run.errors';
import { WorkerTrainer } from '../worker/worker.trainer';
import type { TrainerWorkerClient } from '@rstar/workers';
import { buildHfSftTrace, type HfSftTrace, type HfTraceTokenizer } from './hf-sft.traces';

/** Options of {@link runWorkerSft}. */
export interface WorkerSftOptions {
  config: RunConfig;
  /** The rstar run; its SFT stage runs on the worker as run `<runId>.sft`. */
  runId: string;
  client: TrainerWorkerClient;
  /** Shared directory for the batch files (the worker reads them). */
  batchDir: string;
  tokenizer: HfTraceTokenizer;
  /** The base model directory SFT starts from (default `policy.path`; the worker must be able to read it). */
  baseModel?: string;
  /** Runs the task programs (the sandbox) for the traces' real tool responses. */
  execute: CodeExecutor;
  onProgress?: (p: { phase: 'traces'; done: number; total: number } | { phase: 'train'; updates: number; total: number; loss: number }) => void;
  /** How long one request (a chunk of updates) may take, in ms (default 1 hour). */
  stepTimeoutMs?: number;
}

/** What the SFT stage produced: the checkpoint the RL stages start from. */
export interface WorkerSftResult {
  checkpoint: { uri: string; hash: string };
  updates: number;
  requests: number;
  traces: number;
  finalLoss: number;
  seconds: number;
}

/** Seeded execution times shown in SFT traces (0.00s / 0.01s / 0.02s), as libs/policy's SFT does: not the measured ones, which vary with load. */
function shownWallMs(u: number): number {
  return u < 0.6 ? 1 : u < 0.95 ? 10 : 20;
}

/** `n` items of `xs` through `f` with at most `limit` in flight, in order. */
async function mapLimit<T, R>(xs: readonly T[], limit: number, f: (x: T, i: number) => Promise<R>, onDone: (n: number) => void): Promise<R[]> {
  const out = new Array<R>(xs.length);
  let next = 0;
  let done = 0;
  await Promise.all(Array.from({ length: Math.min(limit, xs.length) }, async () => {
    while (next < xs.length) {
      const i = next++;
      out[i] = await f(xs[i]!, i);
      onDone(++done);
    }
  }));
  return out;
}

/**
 * The recipe's non-reasoning SFT stage for a Hugging Face policy, on the trainer worker (mode `sft`,
 * cross-entropy on the model-written tokens): traces of the built-in task family (`data.trainSize` tasks of
 * seed (run seed, 1), each program executed for real in the sandbox) in the model's own tokens and chat
 * template ({@link buildHfSftTrace}); `sft.steps` updates of `sft.batchSize` traces drawn with a seeded PRNG;
 * updates are sent in chunks (`sft.updatesPerRequest`, default ceil(steps / ceil(steps / 50))), one worker
 * step — and one checkpoint — per chunk, each chunk one PPO-style mini-batch per update. Deterministic given
 * the seed, so a restarted caller sends the same batches and gets the worker's stored results.
 * @throws RunRefusedError for `data.source: file` or `sft.toolErrorRate` (the task family's clean traces
 *   only); the worker client's typed errors.
 */
export async function runWorkerSft(o: WorkerSftOptions): Promise<WorkerSftResult> {
  const { config } = o;
  const sft = config.sft;
  if (config.data.source !== 'tasks') throw new RunRefusedError('the SFT stage of a Hugging Face policy builds traces of the task family (data.source: tasks); give policy.init: checkpoint with an SFT checkpoint for a dataset run', 'data.source');
  if ((sft.toolErrorRate ?? 0) > 0) throw new RunRefusedError('sft.toolErrorRate is supported for the builtin policy only; remove it for policy.kind hf', 'sft.toolErrorRate');
  const base = o.baseModel ?? config.policy.path;
  if (!base) throw new RunRefusedError('policy.path is required for the SFT stage of a Hugging Face policy', 'policy.path');
  const t0 = Date.now();
  const seed = config.seed;
  const tasks = generateTasks({ seed: deriveSeed(seed, 1), n: config.data.trainSize });
  const shown = new Rng(deriveSeed(seed, 5));
  const shownMs = tasks.map(() => shownWallMs(shown.next()));
  const compact = config.policy.prompt === 'compact';
  const traces: HfSftTrace[] = await mapLimit(tasks, 4, async (task, i) => {
    const r = await o.execute({ code: task.code });
    return buildHfSftTrace(task, { ...r, wallMs: shownMs[i]! }, o.tokenizer, compact);
  }, (done) => o.onProgress?.({ phase: 'traces', done, total: tasks.length }));

  const steps = sft.steps;
  const chunk = sft.updatesPerRequest ?? Math.ceil(steps / Math.max(1, Math.ceil(steps / 50)));
  const requests = Math.ceil(steps / chunk);
  const trainer = new WorkerTrainer({
    client: o.client, workerRunId: `${o.runId}.sft`, batchDir: o.batchDir, mode: 'sft', initialVersion: 0, initFrom: base,
    loss: () => ({}),
    optimizer: () => ({
      kind: 'adamw', lr: sft.lr, warmupSteps: Math.ceil(sft.warmupSteps / chunk), weightDecay: config.trainer.weightDecay, gradClip: config.trainer.gradClip,
      // The trainer's micro-batch token cap holds for SFT updates too (on CPU it bounds the attention cost of a pack).
      miniBatch: sft.batchSize, microBatch: sft.batchSize, microBatchTokens: config.trainer.microBatchTokens ?? null, ppoEpochs: 1,
    }),
    stepTimeoutMs: o.stepTimeoutMs ?? 3_600_000,
  });
  const rng = new Rng(deriveSeed(seed, 3));
  let finalLoss = NaN;
  let updates = 0;
  for (let r = 0; r < requests; r++) {
    const n = Math.min(chunk, steps - r * chunk);
    const picked = Array.from({ length: n * sft.batchSize }, () => traces[Math.floor(rng.next() * traces.length)]!);
    const batch = sftBatch(r, picked);
    const m = await trainer.trainStep(batch, { runId: o.runId, step: r });
    updates += n;
    finalLoss = m.loss;
    o.onProgress?.({ phase: 'train', updates, total: steps, loss: m.loss });
  }
  const checkpoint = await trainer.save('');
  return { checkpoint, updates, requests, traces: traces.length, finalLoss, seconds: (Date.now() - t0) / 1000 };
}

/** SFT request `r` as a training batch: advantages and old logprobs 0 (unused in SFT mode). */
function sftBatch(r: number, traces: readonly HfSftTrace[]): TrainingBatch {
  const sequences = traces.map((t, i) => ({
    rolloutId: `sft:${r}:${i}`, groupId: `sft:${r}`, tokenIds: t.tokenIds, lossMask: t.lossMask, oldLogprobs: t.tokenIds.map(() => 0),
    advantage: 0, reward: 0, promptLength: t.promptLength,
  }));
  const tokens = sequences.reduce((a, s) => a + s.lossMask.reduce((x, y) => x + y, 0), 0);
  const hash = createHash('sha256').update(JSON.stringify(sequences.map((s) => [s.rolloutId, s.tokenIds, s.lossMask]))).digest('hex');
  return { sequences, tokens, advantageMean: 0, advantageStd: 0, hash };
}
