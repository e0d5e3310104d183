import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startPythonProcess, type PythonProcess } from './python.process';
import { WorkerProcessError } from './workers.errors';
import { workersPython } from './workers.python';

const run = promisify(execFile);

/** Options of {@link startTrainerWorker} (flags of `python -m rstar_trainer serve`). */
export interface TrainerWorkerOptions {
  /** Base model directory (with its tokenizer). */
  model: string;
  /** 0 = any free port (default). */
  port?: number;
  host?: string;
  stateDir: string;
  checkpointRoot?: string;
  device?: string;
  dtype?: string;
  /** torch CPU threads (0 = torch's default). */
  threads?: number;
  env?: Record<string, string>;
  python?: string;
  onLine?: (line: string) => void;
}

/** Start the trainer worker of workers/trainer and wait until it listens. @throws WorkerProcessError, WorkersEnvMissingError. */
export function startTrainerWorker(o: TrainerWorkerOptions): Promise<PythonProcess> {
  const args = ['-m', 'rstar_trainer', 'serve', '--model', resolve(o.model), '--port', String(o.port ?? 0), '--host', o.host ?? '127.0.0.1', '--state-dir', resolve(o.stateDir)];
  if (o.checkpointRoot) args.push('--checkpoint-root', resolve(o.checkpointRoot));
  if (o.device) args.push('--device', o.device);
  if (o.dtype) args.push('--dtype', o.dtype);
  if (o.threads) args.push('--threads', String(o.threads));
  return startPythonProcess({ name: 'trainer worker', python: o.python ?? workersPython(), args, env: o.env, onLine: o.onLine });
}

/** Options of {@link startReferenceEngine} (flags of `python -m rstar_trainer.engine serve`). */
export interface ReferenceEngineOptions {
  model: string;
  port?: number;
  host?: string;
  /** KV-cache capacity in tokens (`max_total_num_tokens`). */
  kvCapacityTokens?: number;
  /** `sglang` (optimistic admission, retraction on overflow; default) or `reserve`. */
  admission?: 'sglang' | 'reserve';
  maxRunningRequests?: number;
  weightVersion?: string;
  threads?: number;
  device?: string;
  env?: Record<string, string>;
  python?: string;
  onLine?: (line: string) => void;
}

/** Start the reference engine of workers/trainer (SGLang + vLLM routes) and wait until it listens. */
export function startReferenceEngine(o: ReferenceEngineOptions): Promise<PythonProcess> {
  const args = ['-m', 'rstar_trainer.engine', 'serve', '--model', resolve(o.model), '--port', String(o.port ?? 0), '--host', o.host ?? '127.0.0.1'];
  if (o.kvCapacityTokens) args.push('--kv-capacity-tokens', String(o.kvCapacityTokens));
  if (o.admission) args.push('--admission', o.admission);
  if (o.maxRunningRequests) args.push('--max-running-requests', String(o.maxRunningRequests));
  if (o.weightVersion !== undefined) args.push('--weight-version', o.weightVersion);
  if (o.threads) args.push('--threads', String(o.threads));
  if (o.device) args.push('--device', o.device);
  return startPythonProcess({ name: 'reference engine', python: o.python ?? workersPython(), args, env: o.env, onLine: o.onLine });
}

/** Options of {@link makeTinyModel} (flags of `python -m rstar_trainer make-tiny`). */
export interface TinyModelOptions {
  out: string;
  /** Extra text files the BPE tokenizer is trained on (one text per line). */
  corpus?: string[];
  seed?: number;
  vocabSize?: number;
  hiddenSize?: number;
  layers?: number;
  heads?: number;
  kvHeads?: number;
  intermediateSize?: number;
  maxPositions?: number;
  python?: string;
}

/** What make-tiny prints: the model directory, parameters, vocabulary and special ids. */
export interface TinyModelSummary {
  out: string;
  parameters: number;
  vocabSize: number;
  eosTokenId: number;
  padTokenId: number;
  imStartId: number;
  layers: number;
  hiddenSize: number;
}

/**
 * Build the hf-tiny model offline (`python -m rstar_trainer make-tiny`): a seeded tiny Qwen2 and a byte-level
 * BPE tokenizer with the rStar2 chat template. @throws WorkerProcessError when it fails.
 */
export async function makeTinyModel(o: TinyModelOptions): Promise<TinyModelSummary> {
  const args = ['-m', 'rstar_trainer', 'make-tiny', '--out', resolve(o.out)];
  for (const c of o.corpus ?? []) args.push('--corpus', resolve(c));
  const flags: Array<[string, number | undefined]> = [
    ['--seed', o.seed], ['--vocab-size', o.vocabSize], ['--hidden-size', o.hiddenSize], ['--layers', o.layers], ['--heads', o.heads],
    ['--kv-heads', o.kvHeads], ['--intermediate-size', o.intermediateSize], ['--max-positions', o.maxPositions],
  ];
  for (const [f, v] of flags) if (v !== undefined) args.push(f, String(v));
  try {
    const { stdout } = await run(o.python ?? workersPython(), args, { env: { ...process.env, TOKENIZERS_PARALLELISM: 'false' }, maxBuffer: 16 << 20, timeout: 600_000 });
    const line = stdout.trim().split('\n').at(-1) ?? '';
    return JSON.parse(line) as TinyModelSummary;
  } catch (e) {
    const err = e as { stderr?: string; code?: number; message: string };
    throw new WorkerProcessError('make_tiny_failed', `make-tiny ${o.out} failed: ${(err.stderr ?? err.message).slice(-2000)}`, 'out', typeof err.code === 'number' ? err.code : null);
  }
}

/**
 * {@link makeTinyModel} once per settings: the model is built into `<cacheDir>/hf-tiny-<key>` (key = sha256 of
 * the settings and of the corpus files' bytes) unless that folder is complete already, so tests and
 * benchmarks share one build. Built in a temporary folder and renamed into place, so concurrent callers
 * never see half a model. Returns the model directory.
 */
export async function ensureTinyModel(cacheDir: string, o: Omit<TinyModelOptions, 'out'> = {}): Promise<string> {
  const { createHash } = await import('node:crypto');
  const { existsSync, mkdirSync, readFileSync, renameSync, rmSync } = await import('node:fs');
  const h = createHash('sha256').update(JSON.stringify({ ...o, corpus: undefined, python: undefined }));
  for (const c of o.corpus ?? []) h.update(readFileSync(c));
  const dir = resolve(cacheDir, `hf-tiny-${h.digest('hex').slice(0, 16)}`);
  if (existsSync(resolve(dir, 'config.json')) && existsSync(resolve(dir, 'tokenizer.json'))) return dir;
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  try {
    await makeTinyModel({ ...o, out: tmp });
    try {
      renameSync(tmp, dir);
    } catch (e) {
      // Another caller finished first: its copy is identical (seeded), keep it.
      if (!existsSync(resolve(dir, 'config.json'))) throw e;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}
