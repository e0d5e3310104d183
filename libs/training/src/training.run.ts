import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { ids, makeEvent, parseRunConfig, responseBudgets, streams, type RunConfig } from '@rstar/contracts';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { PolicyModel, runSft, type SftProgress } from '@rstar/policy';
import type { Tokenizer, ToolExecutor } from '@rstar/agent';
import { createEngines, startBuiltinEngine, type BuiltinEngine, type EngineAdapter } from '@rstar/engines';
import { SandboxPool } from '@rstar/sandbox';
import {
  ListPromptSource, OptimizationHandler, promptsFittingContext, readRunEvents, REPO_ROOT, resolveDataPath, resumePoint, runEventSource, runPrompts, RunRefusedError, RunWaitTimeoutError,
  sftOptionsOf, StagedBuiltinTrainer, totalSteps, type Prompt, type RunSummary,
} from '@rstar/step-driver';
import { evaluatePassAt1, poolToolExecutor, type PassAt1Options, type PassAt1Report } from './pass-at-1.evaluator';
import { startRolloutServices } from './rollout-services.starter';
import { restoreSft, sftCacheKey, sftCodeVersion, storeSft } from './sft.cache';
import { pruneCheckpoints } from './checkpoint.pruner';
import { codeVersion } from './code.version';
import { TrackerFeed, trackersOf } from '@rstar/trackers';
import type { RunResult, StepRecord, TrainProgress } from '@rstar/training-report';

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

/** What a finished run returns (its report is written from it): {@link RunResult} with the evaluator's pass@1 reports. */
export type TrainingResult = RunResult<PassAt1Report>;

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
    if (Date.now() - t0 > timeoutMs) throw new RunWaitTimeoutError(what, timeoutMs);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Where a resumed run goes on from: the weights, their policy version, and whether the optimizer starts fresh. */
interface ResumeFrom {
  checkpoint: string;
  version: number;
  freshOptimizer: boolean;
}

/** What every phase of one standalone run shares. */
interface StandaloneRun {
  runId: string;
  outDir: string;
  opts: TrainingOptions;
  runtime: Runtime;
  sandbox: SandboxPool;
  /** A progress message (`phase: 'message'`). */
  say: (text: string) => void;
  /** The code version the run records (taken once at its start: libs/training code.version.ts). */
  codeVersion: string;
}

/** The engine the held-out evaluations and the rollouts use, and the prompts and tools of the evaluations. */
interface HeldOutTarget {
  adapter: EngineAdapter;
  tokenizer: Tokenizer;
  tools: ToolExecutor;
  prompts: Prompt[];
}

/**
 * A whole training run in one process (docs/design/architecture.md §1 mode 1): the non-reasoning SFT stage
 * (libs/policy `runSft`, unless `policy.init: checkpoint`), held-out pass@1, then the GRPO-RoC stages
 * through every handler on one bus (policy-serving over the SGLang adapter against the built-in engine
 * on a loopback port, tool-execution on the sandbox pool, reward-grading, resampling, optimization),
 * then held-out pass@1 again. Every rollout and step is an event in the archive (PGlite by default).
 * The engines reload weights on `PolicyUpdated` through policy-serving (whose version gate holds the
 * next step's rollouts until the new weights are in), so optimization is given no engines of its own.
 * Phases: {@link refuseUnrunnable}, {@link resumeFromArchive} (with `resume`), {@link sftStage}, the
 * engine, {@link measureHeldOut} before RL, {@link startTrackers}, {@link rlStage}, {@link measureHeldOut}
 * after RL, {@link archivedSteps}.
 * @throws RunRefusedError for `validateOnly` configs or an external policy/trainer; errors of any stage.
 */
export async function runTraining(input: RunConfig, opts: TrainingOptions = {}): Promise<TrainingResult> {
  let config: RunConfig = opts.rocOverride === undefined ? input : { ...input, roc: { ...input.roc, enabled: opts.rocOverride } };
  refuseUnrunnable(config);
  const say = (text: string) => opts.onProgress?.({ phase: 'message', text });
  const t0 = Date.now();
  const runId = opts.runId ?? ids.newRun();
  const outDir = resolve(opts.outDir ?? join(REPO_ROOT, 'runs', runId));
  mkdirSync(outDir, { recursive: true });

  const sandbox = new SandboxPool({ workers: opts.sandboxWorkers ?? 2, onWarning: (m) => say(`sandbox: ${m}`) });
  await sandbox.start();
  const ownRuntime = !opts.runtime;
  const runtime = opts.runtime ?? (await connectRuntime({ dataDir: join(outDir, 'events') }));
  const run: StandaloneRun = { runId, outDir, opts, runtime, sandbox, say, codeVersion: codeVersion() };
  let engine: BuiltinEngine | null = null;
  const stops: Array<() => Promise<void>> = [];
  try {
    let resumeFrom: ResumeFrom | null = null;
    if (opts.resume) ({ config, resumeFrom } = await resumeFromArchive(run));
    const fit = runPromptsThatFit(config);
    if (fit.skipped > 0) say(`skipped ${fit.skipped} prompts whose prompt + response budget exceeds the model context ${config.policy.model.context}`);

    const tSft = Date.now();
    const { checkpoint, sft } = await sftStage(run, config, resumeFrom);
    const sftSeconds = since(tSft);

    // The engine: the built-in policy behind SGLang's API, driven through the SGLang adapter.
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: checkpoint, kvCapacityTokens: config.engines[0]?.kvCapacityTokens ?? config.policy.model.context * 64 });
    const adapters = createEngines([`builtin=${engine.url}`]);
    const target: HeldOutTarget = { adapter: adapters[0], tokenizer: engine.model.tokenizer, tools: poolToolExecutor(sandbox, config.tool.outputChars), prompts: fit.heldOut };

    const tEval = Date.now();
    const passAt1Before = opts.skipEval || resumeFrom ? null : await measureHeldOut(run, config, target, 'eval-before');
    const evalBeforeSeconds = since(tEval);
    const evaluations: TrainingResult['evaluations'] = [];
    const trackers = await startTrackers(run, config);
    if (trackers) stops.unshift(() => trackers.close('failed'));
    if (passAt1Before) {
      say(`pass@1 before RL: ${(passAt1Before.passAt1 * 100).toFixed(1)}% on ${fit.heldOut.length} held-out prompts`);
      evaluations.push(await recordEvaluation(run, config, 0, resumeFrom?.version ?? 0, passAt1Before));
    }

    const tRl = Date.now();
    const { summary, records } = await rlStage(run, config, { checkpoint, resumeFrom, train: fit.train, adapters, tokenizer: target.tokenizer, stops });
    const rlSeconds = since(tRl);

    const tAfter = Date.now();
    const passAt1After = opts.skipEval ? null : await measureHeldOut(run, config, target, 'eval-after');
    if (passAt1After) {
      say(`pass@1 after RL: ${(passAt1After.passAt1 * 100).toFixed(1)}%`);
      evaluations.push(await recordEvaluation(run, config, summary.steps, summary.policyVersion, passAt1After));
    }
    await trackers?.close('completed');
    await runtime.flush();
    return {
      runId, outDir, mode: runtime.mode, config, sft, passAt1Before, passAt1After, evaluations, steps: await archivedSteps(runtime.store, runId, records), policyVersion: summary.policyVersion,
      seconds: { sft: sftSeconds, evalBefore: evalBeforeSeconds, rl: rlSeconds, evalAfter: since(tAfter), total: since(t0) },
    };
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
    await engine?.close();
    await sandbox.close();
    if (ownRuntime) await runtime.close();
  }
}

/** Refuses what standalone `rstar train` cannot run: `validateOnly` configs, and any policy, trainer or engine other than the built-in one. */
function refuseUnrunnable(config: RunConfig): void {
  if (config.validateOnly) {
    throw new RunRefusedError(
      `config "${config.name}" is validateOnly: it needs real inference engines and a GPU trainer (it is valid; run it on a cluster with engines configured, or use --preset tiny here)`,
      'validateOnly',
    );
  }
  if (config.policy.kind !== 'builtin' || config.trainer.kind !== 'builtin' || config.engines.some((e) => e.kind !== 'builtin')) {
    throw new RunRefusedError('standalone `rstar train` runs the builtin policy, trainer and engine only (policy.kind, trainer.kind, engines[].kind: builtin)', 'policy.kind');
  }
}

/**
 * A resumed run's config (from its archived `RunStarted`) and the weights it goes on from: its latest
 * `PolicyUpdated`, else its SFT checkpoint in `<outDir>/checkpoints/sft` with a fresh optimizer, else none
 * (SFT runs again). @throws RunRefusedError when the run is not in the archive.
 */
async function resumeFromArchive(run: StandaloneRun): Promise<{ config: RunConfig; resumeFrom: ResumeFrom | null }> {
  const archived = await readRunEvents(run.runtime.store, run.runId);
  const started = archived.find((e) => e.type === 'RunStarted');
  if (!started || started.type !== 'RunStarted') throw new RunRefusedError(`run ${run.runId} is not in the archive at ${run.outDir} (pass the --out folder of that run)`, 'resume');
  const config = parseRunConfig(started.data.config);
  const point = resumePoint(archived);
  const sftDir = join(run.outDir, 'checkpoints', 'sft');
  let resumeFrom: ResumeFrom | null = null;
  if (point.policy) resumeFrom = { checkpoint: point.policy.checkpointUri, version: point.policy.version, freshOptimizer: false };
  else if (existsSync(join(sftDir, 'weights.bin'))) resumeFrom = { checkpoint: sftDir, version: 0, freshOptimizer: true };
  run.say(`resuming run ${run.runId} at step ${point.nextStep}${resumeFrom ? ` from ${resumeFrom.checkpoint}` : ''}`);
  return { config, resumeFrom };
}

/**
 * The weights RL starts from: the resumed run's, the config's checkpoint (`policy.init: checkpoint`), an
 * SFT checkpoint of the SFT cache (sft.cache.ts), or a fresh SFT ({@link sftOptionsOf}, traces run in the
 * run's sandbox) stored in the cache for the next run. `sft` is null when no SFT stage ran or was reused.
 * @throws RunRefusedError when `policy.init` is `checkpoint` without `policy.checkpoint`.
 */
async function sftStage(run: StandaloneRun, config: RunConfig, resumeFrom: ResumeFrom | null): Promise<{ checkpoint: string; sft: TrainingResult['sft'] }> {
  const { opts, say } = run;
  if (resumeFrom) return { checkpoint: resumeFrom.checkpoint, sft: null };
  if (config.policy.init === 'checkpoint') {
    if (!config.policy.checkpoint) throw new RunRefusedError('policy.init is "checkpoint" but policy.checkpoint is empty (give a checkpoint directory)', 'policy.checkpoint');
    return { checkpoint: resolve(REPO_ROOT, config.policy.checkpoint), sft: null };
  }
  const sftDir = join(run.outDir, 'checkpoints', 'sft');
  const codeVersion = (opts.reuseSft ?? process.env.RSTAR_SFT_CACHE !== '0') ? sftCodeVersion() : null;
  const key = codeVersion ? sftCacheKey(config, codeVersion) : null;
  const cached = key ? restoreSft(key, sftDir) : null;
  if (cached) {
    say(`SFT: reused the checkpoint trained ${cached.createdAt} with the same SFT settings, seed ${config.seed} and code version ${cached.codeVersion} (runs/.sft-cache/${cached.key}; --no-sft-cache or RSTAR_SFT_CACHE=0 retrains)`);
    return { checkpoint: sftDir, sft: { steps: cached.steps, seconds: cached.trainSeconds, finalLoss: cached.finalLoss, checkpoint: sftDir, reused: true } };
  }
  say(`SFT: ${config.sft.steps} steps, batch ${config.sft.batchSize}`);
  const r = await runSft(
    sftOptionsOf(config, { outDir: sftDir, sandbox: run.sandbox }),
    (p: SftProgress) => {
      if (p.phase === 'train') opts.onProgress?.({ phase: 'sft', step: p.step, steps: p.steps, loss: p.loss });
      else if (p.phase === 'traces') opts.onProgress?.({ phase: 'sft-traces', done: p.done, total: p.total });
    },
  );
  r.model.dispose();
  const checkpoint = r.checkpoint.dir;
  if (key && codeVersion) storeSft({ key, codeVersion, steps: r.steps, trainSeconds: r.trainSeconds, finalLoss: r.finalLoss, createdAt: new Date().toISOString() }, checkpoint);
  return { checkpoint, sft: { steps: r.steps, seconds: r.trainSeconds, finalLoss: r.finalLoss, checkpoint, reused: false } };
}

/** Held-out pass@1 of the weights the engine serves now ({@link heldOutEvalOptions}), reporting progress as `phase`. */
function measureHeldOut(run: StandaloneRun, config: RunConfig, t: HeldOutTarget, phase: 'eval-before' | 'eval-after'): Promise<PassAt1Report> {
  return evaluatePassAt1(t.adapter, t.tokenizer, t.tools, t.prompts, { ...heldOutEvalOptions(config), onProgress: (done, total) => run.opts.onProgress?.({ phase, done, total }) });
}

/** Publishes a held-out evaluation as `EvaluationCompleted` (key `<runId>:held-out:<afterStep>`) and returns its data. */
async function recordEvaluation(run: StandaloneRun, config: RunConfig, afterStep: number, policyVersion: number, rep: PassAt1Report): Promise<TrainingResult['evaluations'][number]> {
  const data = { name: 'held-out', afterStep, policyVersion, passAt1: rep.passAt1, prompts: rep.prompts, samples: config.eval.samples };
  await run.runtime.bus.publish(makeEvent('EvaluationCompleted', { runId: run.runId, streamId: streams.run(run.runId), key: `${run.runId}:held-out:${afterStep}`, producer: 'optimization', data }));
  return data;
}

/** The experiment trackers of the config's `trackers` section, fed from the bus (null when none is configured); a failing tracker is reported, never fatal. */
async function startTrackers(run: StandaloneRun, config: RunConfig): Promise<TrackerFeed | null> {
  const sinks = trackersOf(config, run.outDir);
  if (!sinks.length) return null;
  const trackers = new TrackerFeed(run.runtime.bus, {
    runId: run.runId, sinks, sampleRollouts: config.trackers?.sampleRollouts,
    run: { runId: run.runId, name: config.name, config: config as unknown as Record<string, unknown>, seed: config.seed, codeVersion: run.codeVersion, mode: run.runtime.mode },
    onError: (e) => run.say(`tracker: ${e.message} (the run goes on without it)`),
  });
  await trackers.start();
  return trackers;
}

/**
 * The GRPO-RoC stages: every handler on the run's bus ({@link startRolloutServices}) and the step driver
 * with the per-stage builtin trainer, from the first step (or the resumed run's next one) to the last;
 * then waits until the engine serves the final policy version. Each handler's stop is put first in `stops`.
 */
async function rlStage(
  run: StandaloneRun,
  config: RunConfig,
  o: { checkpoint: string; resumeFrom: ResumeFrom | null; train: ListPromptSource; adapters: EngineAdapter[]; tokenizer: Tokenizer; stops: Array<() => Promise<void>> },
): Promise<{ summary: RunSummary; records: StepRecord[] }> {
  const { runId, outDir, opts } = run;
  const trainModel = await PolicyModel.load(o.checkpoint);
  const trainer = new StagedBuiltinTrainer(trainModel, config, o.resumeFrom?.version ?? 0, o.resumeFrom?.freshOptimizer ?? true);
  const { bus, store } = run.runtime;
  const services = await startRolloutServices({
    bus, store, runId, config, sandbox: run.sandbox, engines: o.adapters, tokenizer: o.tokenizer, initialPolicyVersion: o.resumeFrom?.version ?? 0,
  });
  o.stops.unshift(() => services.stop());
  const steps = totalSteps(config);
  const records: StepRecord[] = [];
  trainer.beginStep(opts.resume ? resumePoint(await readRunEvents(store, runId)).nextStep : 0);
  const optimization = new OptimizationHandler(bus, {
    config, runId, prompts: o.train, trainer, engines: [], checkpointDir: join(outDir, 'checkpoints'),
    store: runEventSource(store), mode: run.runtime.mode, codeVersion: run.codeVersion,
    onStep: (step, stage, metrics) => {
      trainer.beginStep(step + 1);
      if (config.checkpoints?.keepLast) pruneCheckpoints(join(outDir, 'checkpoints'), config.checkpoints.keepLast);
      records.push({ step, stage, metrics });
      opts.onProgress?.({ phase: 'rl', step, steps, stage, metrics });
    },
  });
  o.stops.unshift(() => optimization.stop());
  const summary = await optimization.run();
  await waitFor(() => services.serving.policyVersion >= summary.policyVersion, `the engine to load policy version ${summary.policyVersion}`, 120_000);
  return { summary, records };
}

/** Every step of the run from the archive (a resumed run's report covers the steps before the restart too); `records` when the archive has fewer. */
async function archivedSteps(store: Runtime['store'], runId: string, records: StepRecord[]): Promise<StepRecord[]> {
  const archived = (await readRunEvents(store, runId, ['StepCompleted']))
    .flatMap((e) => (e.type === 'StepCompleted' ? [{ step: e.data.step, stage: e.data.stage, metrics: e.data.metrics }] : []))
    .sort((a, b) => a.step - b.step);
  return archived.length >= records.length ? archived : records;
}
