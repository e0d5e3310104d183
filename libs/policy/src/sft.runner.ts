import { resolve } from 'node:path';
import type { ModelConfig } from '@rstar/contracts';
import { SandboxPool } from '@rstar/sandbox';
import { sandboxExecutor, type CodeExecutor } from './code.executor';
import { PolicyInputError } from './errors';
import { PolicyModel } from './policy.model';
import { Rng, deriveSeed } from './rng';
import { evaluateHeldOut, type HeldOutReport } from './tasks/heldout.evaluator';
import { buildNoisyCorrectTrace, buildSftTrace, type SftTrace } from './tasks/sft-trace.builder';
import { generateTasks, type TaskKind } from './tasks/task.generator';
import { planToolErrors, recovers, toolErrorTokenizerSpec, type ToolErrorKind } from './tasks/tool-error.variants';
import { Tokenizer } from './tokenizer';
import { Trainer } from './trainer';

/** Named SFT settings. `tiny`: the default 2-layer, d_model 64 model (~126K parameters). */
export const SFT_PRESETS = {
  tiny: { model: {} as Partial<ModelConfig>, steps: 600, batchSize: 32, lr: 3e-3, warmupSteps: 20, trainSize: 2048, heldOutSize: 64 },
  smoke: { model: { layers: 1, dModel: 32, heads: 2 } as Partial<ModelConfig>, steps: 20, batchSize: 16, lr: 3e-3, warmupSteps: 5, trainSize: 64, heldOutSize: 8 },
} as const;
export type SftPreset = keyof typeof SFT_PRESETS;

/** Options of {@link runSft}; unset fields come from the preset. */
export interface SftOptions {
  preset?: SftPreset;
  steps?: number;
  batchSize?: number;
  lr?: number;
  warmupSteps?: number;
  seed?: number;
  model?: Partial<ModelConfig>;
  trainSize?: number;
  heldOutSize?: number;
  kinds?: TaskKind[];
  /**
   * Share of training traces (0..1, default 0) that first make a realistic failing tool call, show its real
   * error output, then recover with the correct call and answer (the noisy-but-correct trajectories
   * GRPO-RoC is about). Above 0 the model gets the tool-error phrase tokens ({@link toolErrorTokenizerSpec}).
   */
  toolErrorRate?: number;
  /**
   * The mistakes drawn for the erring traces (default: the recovering kinds). `['trailing-check']`: the one
   * call prints the right answer then fails, and the trace answers from its stdout (no recovery needed).
   */
  toolErrorKinds?: ToolErrorKind[];
  /** Checkpoint directory (default `<repo>/checkpoints/sft-<preset>`). */
  outDir?: string;
  /** Runs the task programs and the model's tool calls (default: a 2-worker SandboxPool started and closed here). */
  execute?: CodeExecutor;
  /** Start from this model instead of a fresh one (e.g. a loaded checkpoint). */
  init?: PolicyModel;
}

export type SftProgress =
  | { phase: 'traces'; done: number; total: number }
  | { phase: 'train'; step: number; steps: number; loss: number; lr: number; tokens: number; elapsedMs: number }
  | { phase: 'eval' };

export interface SftResult {
  checkpoint: { dir: string; hash: string };
  model: PolicyModel;
  steps: number;
  trainSeconds: number;
  finalLoss: number;
  trainTokensPerS: number;
  numParams: number;
  heldOut: HeldOutReport;
}

async function mapLimit<T, R>(xs: T[], limit: number, f: (x: T, i: number) => Promise<R>, onDone: (n: number) => void): Promise<R[]> {
  const out = new Array<R>(xs.length);
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, xs.length) }, async () => {
      while (next < xs.length) {
        const i = next++;
        out[i] = await f(xs[i], i);
        onDone(++done);
      }
    }),
  );
  return out;
}

/**
 * The non-reasoning SFT stage at miniature scale: build traces of the task family by executing
 * each reference program for real, train with masked NLL on model-written tokens, save the checkpoint
 * atomically, then evaluate on held-out tasks (disjoint seed) with the model's tool calls executed for real.
 * Deterministic given `seed` (data order, init, sampling). `rstar train` calls this for its SFT stage.
 */
export async function runSft(opts: SftOptions = {}, onProgress: (p: SftProgress) => void = () => {}): Promise<SftResult> {
  const presetName = opts.preset ?? 'tiny';
  const preset = SFT_PRESETS[presetName];
  if (!preset) throw new PolicyInputError(`unknown SFT preset "${presetName}" (known: ${Object.keys(SFT_PRESETS).join(', ')})`, 'preset');
  const seed = opts.seed ?? 1;
  let pool: SandboxPool | null = null;
  if (!opts.execute) {
    pool = new SandboxPool({ workers: 2 });
    await pool.start();
  }
  try {
    return await sftWithExecutor(opts, presetName, seed, opts.execute ?? sandboxExecutor(pool!), onProgress);
  } finally {
    await pool?.close();
  }
}

/** The execution time (ms) an SFT trace shows for uniform draw `u`: 0.00s, 0.01s or 0.02s once formatted. */
function shownWallMs(u: number): number {
  return u < 0.6 ? 1 : u < 0.95 ? 10 : 20;
}

async function sftWithExecutor(opts: SftOptions, presetName: SftPreset, seed: number, execute: CodeExecutor, onProgress: (p: SftProgress) => void): Promise<SftResult> {
  const preset = SFT_PRESETS[presetName];
  const steps = opts.steps ?? preset.steps;
  const batchSize = opts.batchSize ?? preset.batchSize;
  const toolErrorRate = opts.toolErrorRate ?? 0;
  const tokenizer = toolErrorRate > 0 ? new Tokenizer(toolErrorTokenizerSpec()) : new Tokenizer();
  const model = opts.init ?? (await PolicyModel.create({ ...preset.model, ...opts.model }, seed, tokenizer));

  const train = generateTasks({ seed: deriveSeed(seed, 1), n: opts.trainSize ?? preset.trainSize, kinds: opts.kinds });
  const heldOut = generateTasks({ seed: deriveSeed(seed, 2), n: opts.heldOutSize ?? preset.heldOutSize, kinds: opts.kinds });
  const failing = planToolErrors(train, toolErrorRate, deriveSeed(seed, 4), opts.toolErrorKinds);
  // A trace shows a seeded execution time, not the measured one: that one, stretched by whatever else
  // the machine runs, made the checkpoint of one seed differ between machines and runs. The draw is the
  // spread these programs show (0.00s idle; under load on 2 cores ~60% 0.00s, ~35% 0.01s, a few 0.02s),
  // so the policy meets every value it will see later and learns that none of them matters.
  const shown = new Rng(deriveSeed(seed, 5));
  const shownMs = train.map(() => [shownWallMs(shown.next()), shownWallMs(shown.next())] as const);
  const run = async (code: string, ms: number) => ({ ...(await execute({ code })), wallMs: ms });
  const traces: SftTrace[] = await mapLimit(train, 4, async (t, i) => {
    const bug = failing[i];
    const [msBug, ms] = shownMs[i]!;
    if (bug && !recovers(bug.kind)) return buildNoisyCorrectTrace(t, { code: bug.code, result: await run(bug.code, msBug) }, model.tokenizer);
    const failed = bug ? { code: bug.code, result: await run(bug.code, msBug) } : undefined;
    return buildSftTrace(t, await run(t.code, ms), model.tokenizer, failed);
  }, (done) => onProgress({ phase: 'traces', done, total: train.length }));
  const tooLong = traces.find((t) => t.tokenIds.length > model.config.context);
  if (tooLong) throw new PolicyInputError(`a trace has ${tooLong.tokenIds.length} tokens, more than model.context ${model.config.context} (raise model.context)`, 'model.context');

  const trainer = new Trainer(model, { lr: opts.lr ?? preset.lr, warmupSteps: opts.warmupSteps ?? preset.warmupSteps, totalSteps: steps, weightDecay: 0.01, gradClip: 1 });
  const rng = new Rng(deriveSeed(seed, 3));
  const t0 = Date.now();
  let tokens = 0;
  let finalLoss = NaN;
  for (let s = 1; s <= steps; s++) {
    const batch = Array.from({ length: batchSize }, () => traces[Math.floor(rng.next() * traces.length)]);
    const m = trainer.sftStep({ tokenIds: batch.map((t) => t.tokenIds), lossMask: batch.map((t) => t.lossMask) });
    tokens += batch.reduce((a, t) => a + t.tokenIds.length, 0);
    finalLoss = m.loss;
    onProgress({ phase: 'train', step: s, steps, loss: m.loss, lr: m.lr, tokens, elapsedMs: Date.now() - t0 });
  }
  const trainSeconds = (Date.now() - t0) / 1000;
  onProgress({ phase: 'eval' });
  const report = await evaluateHeldOut(model, heldOut, execute);
  const outDir = opts.outDir ?? resolve(__dirname, '../../..', 'checkpoints', `sft-${presetName}`);
  const checkpoint = model.save(outDir, {
    stage: 'sft', preset: presetName, seed, steps: trainer.step, ...(toolErrorRate > 0 ? { toolErrorRate } : {}), ...(toolErrorRate > 0 && opts.toolErrorKinds ? { toolErrorKinds: opts.toolErrorKinds } : {}), finalLoss, heldOutToolFormat: report.toolFormat, heldOutCorrect: report.correct, heldOutN: report.n,
  });
  return { checkpoint, model, steps, trainSeconds, finalLoss, trainTokensPerS: tokens / Math.max(trainSeconds, 1e-9), numParams: model.numParams, heldOut: report };
}
