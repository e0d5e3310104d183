import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ModelTokenizer } from '@rstar/agent';
import { makeEvent, streams, type RstarEvent, type RunConfig } from '@rstar/contracts';
import { checkLoadedWeights, probeTokens, type EngineAdapter } from '@rstar/engines';
import type { EventStore } from '@rstar/event-store';
import type { EventBus } from '@rstar/messaging';
import { sandboxExecutor } from '@rstar/policy';
import { SandboxPool } from '@rstar/sandbox';
import { TrainerWorkerClient } from '@rstar/workers';
import { distributedRolloutExtras, OptimizationHandler, resumePoint, type RunSummary } from '../driver';
import { readRunEvents, runEventSource } from '../event-store.sources';
import { runPrompts } from '../prompt.sources';
import { resolveDataPath } from '../run-config.loader';
import { RunRefusedError } from '../run.errors';
import { WorkerTrainer, workerCheckpoints, workerLoss, workerOptimizer } from '../worker/worker.trainer';
import { runWorkerSft } from './hf-sft.runner';
import { OPTIMIZATION_STEPS_DURABLE } from '../pipeline.consumers';
import { checkRunTokenizers } from './tokenizer.check';
import { HfPolicyDelivery } from './policy-delivery';

/** What the optimization service gives a Hugging Face run (see `LaunchDeps` of distributed-run.launcher.ts). */
export interface HfLaunchDeps {
  bus: EventBus;
  store: EventStore;
  engines: readonly EngineAdapter[];
  /** The trainer worker's URL when the config names none (RSTAR_TRAINER_URL). */
  trainerUrl?: string;
  /** Shared directory the worker reads batch files from (RSTAR_BATCH_DIR). */
  batchDir: string;
  /** How the run's events record it (default `distributed`: the optimization service). */
  mode?: 'standalone' | 'distributed';
  /** Told the weights the RL stages start from (the SFT checkpoint, the given one, or the base model) and their version. */
  onStartWeights?: (dir: string, version: number, sft: { updates: number; finalLoss: number; seconds: number } | null) => void;
  working?: () => void;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * A distributed run of a Hugging Face policy (`policy.kind: hf`, `trainer.kind: worker`): refuses it with
 * `RunFailed` when the trainer worker cannot be reached or the tokenizers of the trainer, the run's model and
 * the engines differ ({@link checkRunTokenizers}, naming both hashes); then the SFT stage on the worker
 * ({@link runWorkerSft}; or `policy.init: checkpoint`, or the base model when `sft.steps` is 0), pushes
 * those weights to every engine as policy version 0 (each must then report weight version "0"), and drives
 * the RL steps with the {@link WorkerTrainer} (PPO mini-batches, TIS, the stage's lr and temperature). Every
 * `RolloutRequested` carries the run's prompt format and tokenizer hash. After a restart the archive's
 * latest `PolicyUpdated` is the start, and the worker answers steps it already trained from its store.
 * Every update reaches the engines through {@link HfPolicyDelivery} (docs/design/protocol.md §9): with
 * `trainer.weightSync: distributed` the engines' routes are checked before SFT and the weight-update group is
 * formed before the first step; on both paths each update is probed and `StepOptimized` records the result.
 */
export async function launchHfRun(ev: RstarEvent<'RunStarted'>, config: RunConfig, deps: HfLaunchDeps): Promise<RunSummary | null> {
  const runId = ev.runId;
  const log = deps.log ?? (() => undefined);
  const fail = async (error: string) => {
    log('run refused', { runId, error });
    await deps.bus.publish(makeEvent('RunFailed', { runId, streamId: streams.run(runId), key: runId, producer: 'optimization', causedBy: ev, data: { error, step: null } }));
    return null;
  };
  const url = config.trainer.url ?? deps.trainerUrl;
  if (!url) return fail('trainer.kind "worker" needs the trainer worker: set RSTAR_TRAINER_URL on the optimization service (or trainer.url in the config)');
  const client = new TrainerWorkerClient(url, { onRetry: (m) => log('trainer worker not answering; retrying', { runId, detail: m }) });
  const archived = await readRunEvents(deps.store, runId);
  const resume = resumePoint(archived);
  if (resume.finished) return null;

  let tokenizer: ModelTokenizer;
  let tokenizerHash: string;
  let modelDir: string;
  let delivery: HfPolicyDelivery;
  try {
    const info = await client.info();
    modelDir = resolveDataPath(config.policy.path ?? (config.policy.init === 'checkpoint' && config.policy.checkpoint ? config.policy.checkpoint : info.model));
    tokenizer = ModelTokenizer.load(modelDir, config.policy.path ? 'policy.path' : 'policy.checkpoint');
    tokenizerHash = await checkRunTokenizers({ trainer: { url, tokenizerHash: info.tokenizerHash }, model: { dir: modelDir, tokenizerHash: tokenizer.hash }, engines: deps.engines });
    delivery = new HfPolicyDelivery({
      runId, config, trainerUrl: url, engines: deps.engines, probeTokenIds: probeTokens(vocabSizeOf(modelDir)),
      waitMs: (config.trainer.stepTimeoutS ?? 3600) * 1000,
    });
    // Before any SFT: an engine that cannot take part in the run's weight sync is refused now.
    await delivery.checkRoutes();
  } catch (e) {
    return fail((e as Error).message);
  }

  const dir = resolve(deps.batchDir);
  const beat = setInterval(() => deps.working?.(), 10_000);
  try {
    let weights: string;
    let version = 0;
    let sftReport: { updates: number; finalLoss: number; seconds: number } | null = null;
    if (resume.policy) {
      weights = resume.policy.checkpointUri;
      version = resume.policy.version;
      log('resuming run', { runId, step: resume.nextStep, version });
    } else if (config.policy.init === 'checkpoint') {
      if (!config.policy.checkpoint) return fail('policy.init is "checkpoint" but policy.checkpoint is empty (give the SFT checkpoint directory)');
      weights = resolveDataPath(config.policy.checkpoint);
    } else if (config.sft.steps > 0) {
      const sandbox = new SandboxPool({ workers: 2 });
      await sandbox.start();
      try {
        log('SFT stage on the trainer worker', { runId, updates: config.sft.steps });
        const r = await runWorkerSft({
          config, runId, client, batchDir: dir, tokenizer, baseModel: modelDir,
          execute: sandboxExecutor(sandbox, { timeoutMs: config.tool.timeoutMs, memoryMb: config.tool.memoryMb }),
          onProgress: (p) => {
            deps.working?.();
            if (p.phase === 'train') log('SFT', { runId, updates: p.updates, of: p.total, loss: p.loss });
          },
        });
        weights = r.checkpoint.uri;
        sftReport = { updates: r.updates, finalLoss: r.finalLoss, seconds: r.seconds };
        log('SFT done', { runId, checkpoint: weights, loss: r.finalLoss, seconds: r.seconds });
      } finally {
        await sandbox.close();
      }
    } else {
      weights = modelDir;
    }
    deps.onStartWeights?.(weights, version, sftReport);
    // The engines serve policy version `version` from here on, and must say so.
    await Promise.all(deps.engines.map(async (a) => {
      const answer = await a.updateWeights(weights, { version });
      await a.flushCache();
      const mismatch = checkLoadedWeights(a, { version, checkpointHash: null }, answer || null);
      if (mismatch) throw mismatch;
    }));
    // Distributed runs: the group forms once per run (again on every resume).
    await delivery.start();
    // A fresh run from the base model: the trainer holds it too, so the engines' start weights are probed as well.
    if (weights === modelDir && !resume.policy) await delivery.probe(version, 'disk');
    const trainer = new WorkerTrainer({
      client, workerRunId: runId, batchDir: dir, mode: 'grpo', initialVersion: version, initFrom: weights,
      loss: (step) => workerLoss(config, step), optimizer: (step) => workerOptimizer(config, step),
      checkpoints: (step) => workerCheckpoints(config, step),
      stepTimeoutMs: (config.trainer.stepTimeoutS ?? 3600) * 1000,
    });
    const handler = new OptimizationHandler(deps.bus, {
      config, runId, prompts: runPrompts(config, resolveDataPath).train, trainer, engines: [], delivery, checkpointDir: join(dir, runId),
      store: runEventSource(deps.store), mode: deps.mode ?? 'distributed', codeVersion: ev.data.codeVersion,
      ...((deps.mode ?? 'distributed') === 'distributed' ? { durable: OPTIMIZATION_STEPS_DURABLE } : {}),
      // SFT traces and rollouts share one prompt format (the full template unless the config says compact).
      rolloutExtras: { prompt: { compact: config.policy.prompt === 'compact' }, tokenizerHash, ...((deps.mode ?? 'distributed') === 'distributed' ? distributedRolloutExtras(config) : {}) },
      onStep: (step, stage, metrics) => log('step completed', { runId, step, stage, rewardMean: metrics.rewardMean, passRate: metrics.passRate, clipFraction: metrics.clipFraction }),
    });
    try {
      return await handler.run();
    } finally {
      await handler.stop();
    }
  } catch (e) {
    // A failure before the step driver ran (SFT, the first weight push): the driver emits RunFailed itself for its own.
    const msg = (e as Error).message;
    if (!archived.some((x) => x.type === 'RunFailed')) await fail(msg).catch(() => undefined);
    throw e;
  } finally {
    clearInterval(beat);
  }
}

/** `vocab_size` of a Hugging Face model directory's config.json (the probe's token range). @throws RunRefusedError when absent. */
function vocabSizeOf(modelDir: string): number {
  let v: unknown;
  try {
    v = (JSON.parse(readFileSync(join(modelDir, 'config.json'), 'utf8')) as { vocab_size?: unknown }).vocab_size;
  } catch (e) {
    throw new RunRefusedError(`cannot read ${join(modelDir, 'config.json')}: ${(e as Error).message} (policy.path must be a Hugging Face model directory)`, 'policy.path');
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 4) throw new RunRefusedError(`${join(modelDir, 'config.json')} has no integer vocab_size (policy.path must be a Hugging Face model directory)`, 'policy.path');
  return v;
}
