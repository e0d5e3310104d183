import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { ids, makeEvent, parseRunConfig, responseBudgets, streams, type EventData, type RunConfig } from '@rstar/contracts';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { OptimizationHandler, resumePoint, totalSteps } from './driver';
import type { Prompt } from './driver';
import { PolicyModel, runSft, type SftProgress } from '@rstar/policy';
import { createEngines, startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { SandboxPool } from '@rstar/sandbox';
import { readRunEvents, runEventSource } from './event-store.sources';
import { evaluatePassAt1, poolToolExecutor, type PassAt1Options, type PassAt1Report } from './pass-at-1.evaluator';
import { ListPromptSource, promptsFittingContext, runPrompts } from './prompt.sources';
import { REPO_ROOT, resolveDataPath } from './run-config.loader';
import { startRolloutServices } from './rollout-services.starter';
import { StagedBuiltinTrainer } from './staged.trainer';
import { restoreSft, sftCacheKey, sftCodeVersion, storeSft } from './sft.cache';
import { pruneCheckpoints } from './checkpoint.pruner';
import { TrackerFeed, trackersOf } from '@rstar/trackers';

export { RunRefusedError } from './run.errors';
import { RunRefusedError } from './run.errors';

/** Progress of a run, by phase (for progress bars and logs). */
export type TrainProgress =
  | { phase: 'sft'; step: number; steps: number; loss: number }
  | { phase: 'sft-traces'; done: number; total: number }
  | { phase: 'eval-before' | 'eval-after'; done: number; total: number }
  | { phase: 'rl'; step: number; steps: number; stage: string; metrics: Record<string, number | null> }
  | { phase: 'message'; text: string };

/** Options of {@link runTraining}. */
export interface TrainingOptions {
  /** Run id (default: a new UUIDv7). */
  runId?: string;
  /**
   * Resume run `runId` from the archive (standalone: the PGlite folder `<outDir>/events`, so pass the same
   * `outDir`): its config comes from its `RunStarted`, the weights from its latest `PolicyUpdated` (or its SFT
   * checkpoint), and the step driver goes on at the next step. pass@1 before RL is not re-measured.
   */
  resume?: boolean;
  /** Run folder (checkpoints, report); default `<repo>/runs/<runId>`. */
  outDir?: string;
  /** Bus + archive to use; default `connectRuntime()` (standalone unless RSTAR_NATS_URL is set), closed at the end. */
  runtime?: Runtime;
  /** Sandbox zygotes (default 2). */
  sandboxWorkers?: number;
  /** Skip the held-out pass@1 evaluations (tests). */
  skipEval?: boolean;
  /** Plain GRPO instead of GRPO-RoC for this run (the ablation): overrides `roc.enabled`. */
  rocOverride?: boolean;
  /**
   * Reuse an SFT checkpoint this machine already trained with the same SFT settings, seed and code
   * version (sft.cache.ts; default true, env RSTAR_SFT_CACHE=0 turns it off); a fresh one is stored for
   * the next run.
   */
  reuseSft?: boolean;
  onProgress?: (p: TrainProgress) => void;
}

/** One RL step's record for the report. */
export interface StepRecord {
  step: number;
  stage: string;
  metrics: Record<string, number | null>;
}

/** What a finished run returns. */
export interface TrainingResult {
  runId: string;
  outDir: string;
  mode: 'standalone' | 'distributed';
  config: RunConfig;
  /** The SFT stage; `reused`: its checkpoint came from the SFT cache (`seconds` is then the original training time). */
  sft: { steps: number; seconds: number; finalLoss: number; checkpoint: string; reused: boolean } | null;
  passAt1Before: PassAt1Report | null;
  passAt1After: PassAt1Report | null;
  /** Every held-out evaluation, as recorded in `EvaluationCompleted` (before RL at afterStep 0, after the last step). */
  evaluations: Array<EventData<'EvaluationCompleted'>>;
  steps: StepRecord[];
  policyVersion: number;
  /** Seconds per phase and in total. */
  seconds: { sft: number; evalBefore: number; rl: number; evalAfter: number; total: number };
}

/**
 * A run's training and held-out prompts ({@link runPrompts}), keeping those whose prompt + largest response
 * budget fit the model context ({@link promptsFittingContext}); `skipped` counts the others.
 * @throws RunRefusedError when no training (or no held-out) prompt fits.
 */
export function runPromptsThatFit(config: RunConfig): { train: ListPromptSource; heldOut: Prompt[]; skipped: number } {
  const prompts = runPrompts(config, resolveDataPath);
  return promptsThatFit(config, prompts.train.prompts, prompts.heldOut);
}

/** Held-out pass@1 settings of a run (`eval` section, seeded by the run seed), as `rstar train` measures before and after RL. */
export function heldOutEvalOptions(config: RunConfig): PassAt1Options {
  return {
    samples: config.eval.samples, temperature: config.eval.temperature, maxTurns: config.eval.maxTurns, maxResponseTokens: config.eval.maxResponseTokens,
    seed: config.seed, compactPrompt: true, toolTimeoutMs: config.tool.timeoutMs, toolMemoryMb: config.tool.memoryMb,
  };
}

/** {@link promptsFittingContext} over a run's pools; refuses a run left without prompts. */
function promptsThatFit(config: RunConfig, train: readonly Prompt[], heldOut: readonly Prompt[]): { train: ListPromptSource; heldOut: Prompt[]; skipped: number } {
  const ctx = config.policy.model.context;
  const [largest, budget] = responseBudgets(config).reduce((a, b) => (b[1] > a[1] ? b : a));
  const t = promptsFittingContext(train, ctx, budget);
  const h = promptsFittingContext(heldOut, ctx, budget);
  // A prompt fits when its tokens plus the largest response budget fit the context: name both knobs.
  const fix = `with room for ${budget} response tokens (${largest}); raise policy.model.context or lower ${largest}`;
  if (t.length === 0) throw new RunRefusedError(`no training prompt fits policy.model.context ${ctx} ${fix}`, 'policy.model.context');
  if (h.length === 0 && heldOut.length > 0) throw new RunRefusedError(`no held-out prompt fits policy.model.context ${ctx} ${fix}`, 'policy.model.context');
  return { train: new ListPromptSource(t), heldOut: h, skipped: train.length - t.length + heldOut.length - h.length };
}

const since = (t: number) => (Date.now() - t) / 1000;

async function waitFor(cond: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A whole training run in one process (ARCHITECTURE §1 mode 1): the non-reasoning SFT stage
 * (libs/policy `runSft`, unless `policy.init: checkpoint`), held-out pass@1, then the GRPO-RoC stages
 * through every handler on one bus (policy-serving over the SGLang adapter against the built-in engine
 * on a loopback port, tool-execution on the sandbox pool, reward-grading, resampling, optimization),
 * then held-out pass@1 again. Every rollout and step is an event in the archive (PGlite by default).
 * The engines reload weights on `PolicyUpdated` through policy-serving (whose version gate holds the
 * next step's rollouts until the new weights are in), so optimization is given no engines of its own.
 * @throws RunRefusedError for `validateOnly` configs or an external policy/trainer; errors of any stage.
 */
export async function runTraining(input: RunConfig, opts: TrainingOptions = {}): Promise<TrainingResult> {
  let config: RunConfig = opts.rocOverride === undefined ? input : { ...input, roc: { ...input.roc, enabled: opts.rocOverride } };
  if (config.validateOnly) {
    throw new RunRefusedError(
      `config "${config.name}" is validateOnly: it needs real inference engines and a GPU trainer (it is valid; run it on a cluster with engines configured, or use --preset tiny here)`,
      'validateOnly',
    );
  }
  if (config.policy.kind !== 'builtin' || config.trainer.kind !== 'builtin' || config.engines.some((e) => e.kind !== 'builtin')) {
    throw new RunRefusedError('standalone `rstar train` runs the builtin policy, trainer and engine only (policy.kind, trainer.kind, engines[].kind: builtin)', 'policy.kind');
  }
  const say = (text: string) => opts.onProgress?.({ phase: 'message', text });
  const t0 = Date.now();
  const runId = opts.runId ?? ids.newRun();
  const outDir = resolve(opts.outDir ?? join(REPO_ROOT, 'runs', runId));
  mkdirSync(outDir, { recursive: true });

  const sandbox = new SandboxPool({ workers: opts.sandboxWorkers ?? 2, onWarning: (m) => say(`sandbox: ${m}`) });
  await sandbox.start();
  const ownRuntime = !opts.runtime;
  const runtime = opts.runtime ?? (await connectRuntime({ dataDir: join(outDir, 'events') }));
  let engine: BuiltinEngine | null = null;
  const stops: Array<() => Promise<void>> = [];
  try {
    let resumeFrom: { checkpoint: string; version: number; freshOptimizer: boolean } | null = null;
    if (opts.resume) {
      const archived = await readRunEvents(runtime.store, runId);
      const started = archived.find((e) => e.type === 'RunStarted');
      if (!started || started.type !== 'RunStarted') throw new RunRefusedError(`run ${runId} is not in the archive at ${outDir} (pass the --out folder of that run)`, 'resume');
      config = parseRunConfig(started.data.config);
      const point = resumePoint(archived);
      const sftDir = join(outDir, 'checkpoints', 'sft');
      if (point.policy) resumeFrom = { checkpoint: point.policy.checkpointUri, version: point.policy.version, freshOptimizer: false };
      else if (existsSync(join(sftDir, 'weights.bin'))) resumeFrom = { checkpoint: sftDir, version: 0, freshOptimizer: true };
      say(`resuming run ${runId} at step ${point.nextStep}${resumeFrom ? ` from ${resumeFrom.checkpoint}` : ''}`);
    }
    const fit = runPromptsThatFit(config);
    if (fit.skipped > 0) say(`skipped ${fit.skipped} prompts whose prompt + response budget exceeds the model context ${config.policy.model.context}`);
    const { train, heldOut } = fit;
    const tools = poolToolExecutor(sandbox, config.tool.outputChars);
    // --- SFT (or a given checkpoint) ---
    let sft: TrainingResult['sft'] = null;
    let checkpoint: string;
    const tSft = Date.now();
    if (resumeFrom) {
      checkpoint = resumeFrom.checkpoint;
    } else if (config.policy.init === 'checkpoint') {
      if (!config.policy.checkpoint) throw new RunRefusedError('policy.init is "checkpoint" but policy.checkpoint is empty (give a checkpoint directory)', 'policy.checkpoint');
      checkpoint = resolve(REPO_ROOT, config.policy.checkpoint);
    } else {
      const sftDir = join(outDir, 'checkpoints', 'sft');
      const codeVersion = (opts.reuseSft ?? process.env.RSTAR_SFT_CACHE !== '0') ? sftCodeVersion() : null;
      const key = codeVersion ? sftCacheKey(config, codeVersion) : null;
      const cached = key ? restoreSft(key, sftDir) : null;
      if (cached) {
        checkpoint = sftDir;
        sft = { steps: cached.steps, seconds: cached.trainSeconds, finalLoss: cached.finalLoss, checkpoint, reused: true };
        say(`SFT: reused the checkpoint trained ${cached.createdAt} with the same SFT settings, seed ${config.seed} and code version ${cached.codeVersion} (runs/.sft-cache/${cached.key}; --no-sft-cache or RSTAR_SFT_CACHE=0 retrains)`);
      } else {
        say(`SFT: ${config.sft.steps} steps, batch ${config.sft.batchSize}`);
        const r = await runSft(
          {
            steps: config.sft.steps, batchSize: config.sft.batchSize, lr: config.sft.lr, warmupSteps: config.sft.warmupSteps, seed: config.seed,
            model: config.policy.model, trainSize: config.data.trainSize, heldOutSize: Math.min(16, config.data.heldOutSize), toolErrorRate: config.sft.toolErrorRate ?? 0, toolErrorKinds: config.sft.toolErrorKinds, outDir: sftDir,
            execute: (req) => sandbox.execute({ code: req.code, input: req.input, timeoutMs: config.tool.timeoutMs, memoryMb: config.tool.memoryMb, outputChars: config.tool.outputChars }),
          },
          (p: SftProgress) => {
            if (p.phase === 'train') opts.onProgress?.({ phase: 'sft', step: p.step, steps: p.steps, loss: p.loss });
            else if (p.phase === 'traces') opts.onProgress?.({ phase: 'sft-traces', done: p.done, total: p.total });
          },
        );
        r.model.dispose();
        checkpoint = r.checkpoint.dir;
        sft = { steps: r.steps, seconds: r.trainSeconds, finalLoss: r.finalLoss, checkpoint, reused: false };
        if (key && codeVersion) storeSft({ key, codeVersion, steps: r.steps, trainSeconds: r.trainSeconds, finalLoss: r.finalLoss, createdAt: new Date().toISOString() }, checkpoint);
      }
    }
    const sftSeconds = since(tSft);

    // --- the engine: the built-in policy behind SGLang's API, driven through the SGLang adapter ---
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: checkpoint, kvCapacityTokens: config.engines[0]?.kvCapacityTokens ?? config.policy.model.context * 64 });
    const engineModel = engine.model;
    const adapters = createEngines([`builtin=${engine.url}`]);
    const evalOpts = heldOutEvalOptions(config);
    const tEval = Date.now();
    const passAt1Before = opts.skipEval || resumeFrom
      ? null
      : await evaluatePassAt1(adapters[0], engineModel.tokenizer, tools, heldOut, { ...evalOpts, onProgress: (done, total) => opts.onProgress?.({ phase: 'eval-before', done, total }) });
    const evalBeforeSeconds = since(tEval);
    const evaluations: TrainingResult['evaluations'] = [];
    const recordEval = async (afterStep: number, policyVersion: number, rep: PassAt1Report) => {
      const data = { name: 'held-out', afterStep, policyVersion, passAt1: rep.passAt1, prompts: rep.prompts, samples: config.eval.samples };
      evaluations.push(data);
      await runtime.bus.publish(makeEvent('EvaluationCompleted', { runId, streamId: streams.run(runId), key: `${runId}:held-out:${afterStep}`, producer: 'optimization', data }));
    };
    const sinks = trackersOf(config, outDir);
    const trackers = sinks.length
      ? new TrackerFeed(runtime.bus, {
          runId, sinks, sampleRollouts: config.trackers?.sampleRollouts,
          run: { runId, name: config.name, config: config as unknown as Record<string, unknown>, seed: config.seed, codeVersion: process.env.RSTAR_CODE_VERSION ?? 'dev', mode: runtime.mode },
          onError: (e) => say(`tracker: ${e.message} (the run goes on without it)`),
        })
      : null;
    if (trackers) {
      await trackers.start();
      stops.unshift(() => trackers.close('failed'));
    }
    if (passAt1Before) {
      say(`pass@1 before RL: ${(passAt1Before.passAt1 * 100).toFixed(1)}% on ${heldOut.length} held-out prompts`);
      await recordEval(0, resumeFrom?.version ?? 0, passAt1Before);
    }

    // --- RL: every handler on one bus ---
    const tRl = Date.now();
    const trainModel = await PolicyModel.load(checkpoint);
    const trainer = new StagedBuiltinTrainer(trainModel, config, resumeFrom?.version ?? 0, resumeFrom?.freshOptimizer ?? true);
    const { bus, store } = runtime;
    const services = await startRolloutServices({
      bus, store, runId, config, sandbox, engines: adapters, tokenizer: engineModel.tokenizer, initialPolicyVersion: resumeFrom?.version ?? 0,
    });
    stops.unshift(() => services.stop());
    const serving = services.serving;
    const steps = totalSteps(config);
    const records: StepRecord[] = [];
    trainer.beginStep(opts.resume ? resumePoint(await readRunEvents(store, runId)).nextStep : 0);
    const optimization = new OptimizationHandler(bus, {
      config, runId, prompts: train, trainer, engines: [], checkpointDir: join(outDir, 'checkpoints'),
      store: runEventSource(store), mode: runtime.mode, codeVersion: process.env.RSTAR_CODE_VERSION ?? 'dev',
      onStep: (step, stage, metrics) => {
        trainer.beginStep(step + 1);
        if (config.checkpoints) pruneCheckpoints(join(outDir, 'checkpoints'), config.checkpoints.keepLast);
        records.push({ step, stage, metrics });
        opts.onProgress?.({ phase: 'rl', step, steps, stage, metrics });
      },
    });
    stops.unshift(() => optimization.stop());
    const summary = await optimization.run();
    await waitFor(() => serving.policyVersion >= summary.policyVersion, `the engine to load policy version ${summary.policyVersion}`, 120_000);
    const rlSeconds = since(tRl);

    const tAfter = Date.now();
    const passAt1After = opts.skipEval
      ? null
      : await evaluatePassAt1(adapters[0], engineModel.tokenizer, tools, heldOut, { ...evalOpts, onProgress: (done, total) => opts.onProgress?.({ phase: 'eval-after', done, total }) });
    if (passAt1After) {
      say(`pass@1 after RL: ${(passAt1After.passAt1 * 100).toFixed(1)}%`);
      await recordEval(summary.steps, summary.policyVersion, passAt1After);
    }
    await trackers?.close('completed');
    await runtime.flush();
    // Every step of the run from the archive (a resumed run's report covers the steps before the restart too).
    const archivedSteps = (await readRunEvents(store, runId, ['StepCompleted']))
      .flatMap((e) => (e.type === 'StepCompleted' ? [{ step: e.data.step, stage: e.data.stage, metrics: e.data.metrics }] : []))
      .sort((a, b) => a.step - b.step);
    return {
      runId, outDir, mode: runtime.mode, config, sft, passAt1Before, passAt1After, evaluations, steps: archivedSteps.length >= records.length ? archivedSteps : records, policyVersion: summary.policyVersion,
      seconds: { sft: sftSeconds, evalBefore: evalBeforeSeconds, rl: rlSeconds, evalAfter: since(tAfter), total: since(t0) },
    };
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
    await engine?.close();
    await sandbox.close();
    if (ownRuntime) await runtime.close();
  }
}
