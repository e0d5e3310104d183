import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ModelTokenizer } from '@rstar/agent';
import { ids, makeEvent, streams, type RunConfig } from '@rstar/contracts';
import { createEngines, type EngineAdapter } from '@rstar/engines';
import { connectRuntime } from '@rstar/runtime';
import { SandboxPool } from '@rstar/sandbox';
import { launchHfRun, readRunEvents, REPO_ROOT, resolveDataPath, runPrompts, RunRefusedError, totalSteps } from '@rstar/step-driver';
import { startReferenceEngine, startTrainerWorker, type PythonProcess } from '@rstar/workers';
import { evaluatePassAt1, poolToolExecutor, type PassAt1Report } from '../pass-at-1.evaluator';
import { startRolloutServices } from '../rollout-services.starter';
import type { StepRecord } from '@rstar/training-report';
import { heldOutEvalOptions, type TrainingOptions, type TrainingResult } from '../training.run';
import { ensureHfTinyModel } from './hf-tiny.model';
import { codeVersion } from '../code.version';

/** Options of {@link runHfTraining}: those of `runTraining`, plus CPU threads of the started worker processes. */
export interface HfTrainingOptions extends TrainingOptions {
  /** torch threads of the trainer worker and of each reference engine it starts (default 1 each). */
  workerThreads?: number;
  engineThreads?: number;
  /** Where hf-tiny is built when the config names no model (default `<repo>/.rstar/models`). */
  modelCacheDir?: string;
}

const since = (t: number) => (Date.now() - t) / 1000;

/**
 * A whole run of a Hugging Face policy from one command (`rstar train --preset hf-tiny`): the model
 * (`policy.path`, or hf-tiny built offline when `policy.name` is `hf-tiny`), the trainer worker and one
 * reference engine per `engines[]` entry as separate processes (unless the config gives their URLs),
 * every stage's handler on one bus (`opts.runtime`, default PGlite + in-process; JetStream + Postgres when
 * given), then the run as the optimization service drives it ({@link launchHfRun}: tokenizer check, SFT on
 * the worker, RL through policy-serving with verified weight sync), then held-out pass@1 of the SFT weights
 * and of the last policy on the same prompts and seeds (for the paired gain).
 * @throws RunRefusedError when the run is refused (its `RunFailed` message); errors of any stage.
 */
export async function runHfTraining(config: RunConfig, opts: HfTrainingOptions = {}): Promise<TrainingResult> {
  if (config.policy.kind !== 'hf') throw new RunRefusedError('runHfTraining runs policy.kind "hf" configs', 'policy.kind');
  if (config.validateOnly) throw new RunRefusedError(`config "${config.name}" is validateOnly: it needs GPUs (it is valid; run it on a cluster, or use --preset hf-tiny here)`, 'validateOnly');
  const say = (text: string) => opts.onProgress?.({ phase: 'message', text });
  const t0 = Date.now();
  const version = codeVersion();
  const runId = opts.runId ?? ids.newRun();
  const outDir = resolve(opts.outDir ?? join(REPO_ROOT, 'runs', runId));
  mkdirSync(outDir, { recursive: true });
  let model: string;
  if (config.policy.path) model = resolveDataPath(config.policy.path);
  else if (config.policy.name === 'hf-tiny') {
    say('building hf-tiny offline (python -m rstar_trainer make-tiny)');
    model = await ensureHfTinyModel(opts.modelCacheDir ?? join(REPO_ROOT, '.rstar', 'models'));
  } else throw new RunRefusedError('policy.path must name the Hugging Face model directory (or set policy.name: hf-tiny to build the tiny one)', 'policy.path');
  const runConfig: RunConfig = { ...config, policy: { ...config.policy, path: model } };
  const tokenizer = ModelTokenizer.load(model, 'policy.path');

  const procs: PythonProcess[] = [];
  const stops: Array<() => Promise<void>> = [];
  const sandbox = new SandboxPool({ workers: opts.sandboxWorkers ?? 2, onWarning: (m) => say(`sandbox: ${m}`) });
  const ownRuntime = !opts.runtime;
  const runtime = opts.runtime ?? (await connectRuntime({ dataDir: join(outDir, 'events') }));
  try {
    await sandbox.start();
    let trainerUrl = config.trainer.url;
    if (!trainerUrl) {
      say(`starting the trainer worker on ${model}`);
      const w = await startTrainerWorker({ model, stateDir: join(outDir, 'trainer'), checkpointRoot: join(outDir, 'checkpoints'), threads: opts.workerThreads ?? 1 });
      procs.push(w);
      trainerUrl = w.url;
    }
    const specs: string[] = [];
    for (const e of config.engines) {
      const colocate = e.colocate ? `${e.url?.includes('?') ? '&' : '?'}colocate=1` : '';
      if (e.url) specs.push(`${e.kind}=${e.url}${colocate}`);
      else {
        const p = await startReferenceEngine({ model, kvCapacityTokens: e.kvCapacityTokens ?? 65_536, threads: opts.engineThreads ?? 1, maxRunningRequests: 256, weightVersion: '0' });
        procs.push(p);
        specs.push(`${e.kind}=${p.url}${colocate}`);
      }
    }
    say(`engines: ${specs.join(', ')}; trainer worker: ${trainerUrl}`);
    const adapters: EngineAdapter[] = createEngines(specs);
    const services = await startRolloutServices({ bus: runtime.bus, store: runtime.store, runId, config: runConfig, sandbox, engines: adapters, tokenizer, tokenizerHash: tokenizer.hash });
    stops.unshift(() => services.stop());

    const tStart = Date.now();
    let start: { dir: string; version: number; sft: { updates: number; finalLoss: number; seconds: number } | null } | null = null;
    const steps = totalSteps(runConfig);
    const records: StepRecord[] = [];
    const ev = makeEvent('RunStarted', {
      runId, streamId: streams.run(runId), key: runId, producer: 'cli',
      data: { config: runConfig as unknown as Record<string, unknown>, seed: config.seed, codeVersion: version, mode: runtime.mode },
    });
    // The step summaries come from the run's StepCompleted events, as `--remote` prints them.
    const follow = await runtime.bus.subscribe({
      durable: `hf-train-progress-${runId}`, types: ['StepCompleted'], concurrency: 1,
      handler: async (e) => {
        if (e.runId !== runId || e.type !== 'StepCompleted') return;
        records.push({ step: e.data.step, stage: e.data.stage, metrics: e.data.metrics });
        opts.onProgress?.({ phase: 'rl', step: e.data.step, steps, stage: e.data.stage, metrics: e.data.metrics });
      },
    });
    stops.unshift(() => follow.drain());
    const summary = await launchHfRun(ev, runConfig, {
      bus: runtime.bus, store: runtime.store, engines: adapters, trainerUrl, batchDir: join(outDir, 'batches'), mode: runtime.mode,
      log: (msg, f) => (msg === 'SFT' ? opts.onProgress?.({ phase: 'sft', step: Number(f?.updates), steps: Number(f?.of), loss: Number(f?.loss) }) : msg !== 'step completed' && say(`${msg}${f ? ` ${JSON.stringify(f)}` : ''}`)),
      onStartWeights: (dir, version, sft) => (start = { dir, version, sft }),
    });
    if (!summary) {
      const failed = (await readRunEvents(runtime.store, runId)).find((e) => e.type === 'RunFailed');
      throw new RunRefusedError(failed && failed.type === 'RunFailed' ? failed.data.error : `run ${runId} did not start`, 'config');
    }
    const startWeights = start as { dir: string; version: number; sft: { updates: number; finalLoss: number; seconds: number } | null } | null;
    const sftSeconds = startWeights?.sft?.seconds ?? 0;
    const rlSeconds = since(tStart) - sftSeconds;
    await services.stop();
    stops.shift();

    // Held-out pass@1 of the start weights and of the last policy, same prompts and seeds (paired).
    const { heldOut } = runPrompts(runConfig, resolveDataPath);
    const evalOpts = { ...heldOutEvalOptions(runConfig), compactPrompt: runConfig.policy.prompt === 'compact' };
    const tools = poolToolExecutor(sandbox, config.tool.outputChars);
    const load = async (dir: string, version: number) => {
      for (const a of adapters) await a.updateWeights(dir, { version });
    };
    let before: PassAt1Report | null = null;
    let after: PassAt1Report | null = null;
    // Recorded as events too, so the dashboard and the trackers show the held-out marks of this run.
    const evaluations: TrainingResult['evaluations'] = [];
    const recordEval = async (afterStep: number, policyVersion: number, rep: PassAt1Report) => {
      const data = { name: 'held-out', afterStep, policyVersion, passAt1: rep.passAt1, prompts: rep.prompts, samples: evalOpts.samples };
      evaluations.push(data);
      await runtime.bus.publish(makeEvent('EvaluationCompleted', { runId, streamId: streams.run(runId), key: `${runId}:held-out:${afterStep}`, producer: 'optimization', data }));
    };
    const tEval = Date.now();
    if (!opts.skipEval && startWeights) {
      await load(startWeights.dir, startWeights.version);
      before = await evaluatePassAt1(adapters[0]!, tokenizer, tools, heldOut, { ...evalOpts, onProgress: (done, total) => opts.onProgress?.({ phase: 'eval-before', done, total }) });
      say(`pass@1 of the SFT weights: ${(before.passAt1 * 100).toFixed(1)}% on ${heldOut.length} held-out prompts x ${evalOpts.samples}`);
      await recordEval(0, startWeights.version, before);
    }
    const evalBefore = since(tEval);
    const lastCheckpoint = (await readRunEvents(runtime.store, runId, ['PolicyUpdated'])).reduce<{ v: number; uri: string } | null>(
      (m, e) => (e.type === 'PolicyUpdated' && (!m || e.data.version > m.v) ? { v: e.data.version, uri: e.data.checkpointUri } : m), null,
    );
    const tAfter = Date.now();
    if (!opts.skipEval && lastCheckpoint) {
      await load(lastCheckpoint.uri, lastCheckpoint.v);
      after = await evaluatePassAt1(adapters[0]!, tokenizer, tools, heldOut, { ...evalOpts, onProgress: (done, total) => opts.onProgress?.({ phase: 'eval-after', done, total }) });
      say(`pass@1 after RL: ${(after.passAt1 * 100).toFixed(1)}%`);
      await recordEval(records.length, lastCheckpoint.v, after);
    } else if (before) {
      // No step trained (every group had equal rewards): the last policy is the start weights, already evaluated.
      after = before;
      say('no RL step trained (every group had equal rewards): the last policy is the start weights');
    }
    // A loaded machine can leave the archiver minutes behind; the report reads the archive.
    await runtime.flush(600_000);
    const archived = (await readRunEvents(runtime.store, runId, ['StepCompleted']))
      .flatMap((e) => (e.type === 'StepCompleted' ? [{ step: e.data.step, stage: e.data.stage, metrics: e.data.metrics }] : []))
      .sort((a, b) => a.step - b.step);
    return {
      runId, outDir, mode: runtime.mode, config: runConfig,
      sft: startWeights?.sft ? { steps: startWeights.sft.updates, seconds: startWeights.sft.seconds, finalLoss: startWeights.sft.finalLoss, checkpoint: startWeights.dir, reused: false } : null,
      passAt1Before: before, passAt1After: after, evaluations, steps: archived.length >= records.length ? archived : records, policyVersion: summary.policyVersion,
      seconds: { sft: sftSeconds, evalBefore, rl: rlSeconds, evalAfter: since(tAfter), total: since(t0) },
    };
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
    for (const p of procs) await p.stop().catch(() => undefined);
    await sandbox.close();
    if (ownRuntime) await runtime.close();
  }
}
