import { join, resolve } from 'node:path';
import { makeEvent, parseRunConfig, streams, type RstarEvent, type RunConfig } from '@rstar/contracts';
import type { EventStore } from '@rstar/event-store';
import type { EventBus } from '@rstar/messaging';
import { distributedRolloutExtras, OptimizationHandler, resumePoint, type RunSummary } from './driver';
import { PolicyModel, runSft } from '@rstar/policy';
import type { EngineAdapter } from '@rstar/engines';
import { SandboxPool } from '@rstar/sandbox';
import { readRunEvents, runEventSource } from './event-store.sources';
import { runPrompts } from './prompt.sources';
import { resolveDataPath } from './run-config.loader';
import { StagedBuiltinTrainer } from './staged.trainer';
import { sftOptionsOf } from './sft.options';
import { launchHfRun } from './hf/hf-run.launcher';
import { OPTIMIZATION_STEPS_DURABLE } from './pipeline.consumers';

/** What the optimization service gives the launcher. */
export interface LaunchDeps {
  bus: EventBus;
  store: EventStore;
  /**
   * Every inference engine (policy-serving's): each gets the start weights (SFT, or the resumed version)
   * before the first step. Later updates reach them through policy-serving, which reloads on
   * `PolicyUpdated` and holds each step's rollouts until their policy version is loaded — so the step
   * driver is given no engines of its own (one reload per update, not two). A function gets the run's
   * config and gives its engines (the optimization service: the config's `engines`, URLs it leaves out
   * from RSTAR_ENGINES, `runEngineSpecs` of @rstar/engines); it may throw a typed error naming the field,
   * which fails the run.
   */
  engines: readonly EngineAdapter[] | ((config: RunConfig) => readonly EngineAdapter[]);
  /** Checkpoints go to `<checkpointRoot>/<runId>/` (a path every engine can read). */
  checkpointRoot: string;
  /** The trainer worker's URL for `trainer.kind: worker` runs whose config names none (RSTAR_TRAINER_URL). */
  trainerUrl?: string;
  /** Shared directory for the worker's batch files (RSTAR_BATCH_DIR; default `<checkpointRoot>/batches`). */
  batchDir?: string;
  /** Extends the RunStarted message's ack deadline while the run goes on. */
  working?: () => void;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * Distributed mode's run start (docs/design/architecture.md §1 mode 2): the optimization service consumes a `RunStarted`
 * (from `rstar train --remote`) and calls this, acking the message only when the run has ended. Fresh
 * run: SFT (or `policy.init: checkpoint`), push those weights to every engine as policy version 0, then the
 * step driver. After a restart the message is redelivered: the archive's latest `PolicyUpdated` gives the
 * weights (and optimizer state) to resume from, and {@link OptimizationHandler} goes on at the next step
 * with the same deterministic event ids. A Hugging Face policy (`policy.kind: hf`) runs on the trainer
 * worker ({@link launchHfRun}). A `validateOnly` config that is not a Hugging Face policy ends in `RunFailed`.
 */
export async function launchDistributedRun(ev: RstarEvent<'RunStarted'>, deps: LaunchDeps): Promise<RunSummary | null> {
  const runId = ev.runId;
  const log = deps.log ?? (() => undefined);
  const fail = async (error: string) => {
    await deps.bus.publish(makeEvent('RunFailed', { runId, streamId: streams.run(runId), key: runId, producer: 'optimization', causedBy: ev, data: { error, step: null } }));
    return null;
  };
  let config;
  try {
    config = parseRunConfig(ev.data.config);
  } catch (e) {
    return fail((e as Error).message);
  }
  // A GPU config runs here only as a Hugging Face policy on the engines and trainer worker this service drives.
  if (config.validateOnly && config.policy.kind !== 'hf') return fail(`config "${config.name}" is validateOnly with a ${config.policy.kind} policy (needs real engines and the trainer worker: policy.kind hf)`);
  let engines: readonly EngineAdapter[];
  try {
    engines = typeof deps.engines === 'function' ? deps.engines(config) : deps.engines;
  } catch (e) {
    return fail((e as Error).message);
  }
  if (config.policy.kind === 'hf') {
    return launchHfRun(ev, config, {
      bus: deps.bus, store: deps.store, engines, trainerUrl: deps.trainerUrl, batchDir: deps.batchDir ?? join(resolve(deps.checkpointRoot), 'batches'),
      working: deps.working, log: deps.log,
    });
  }
  const archived = await readRunEvents(deps.store, runId);
  const resume = resumePoint(archived);
  if (resume.finished) return null;
  const dir = resolve(deps.checkpointRoot, runId);
  const beat = setInterval(() => deps.working?.(), 10_000);
  try {
    let weights: string;
    let version = 0;
    if (resume.policy) {
      weights = resume.policy.checkpointUri;
      version = resume.policy.version;
      log('resuming run', { runId, step: resume.nextStep, version });
    } else if (config.policy.init === 'checkpoint') {
      weights = resolve(config.policy.checkpoint ?? '');
    } else {
      const sandbox = new SandboxPool({ workers: 2 });
      await sandbox.start();
      try {
        log('SFT stage', { runId, steps: config.sft.steps });
        const r = await runSft(sftOptionsOf(config, { outDir: join(dir, 'sft'), sandbox }));
        r.model.dispose();
        weights = r.checkpoint.dir;
      } finally {
        await sandbox.close();
      }
    }
    // The engines serve version `version` from here on (version 0 = the SFT weights).
    await Promise.all(engines.map((a) => a.updateWeights(weights)));
    const model = await PolicyModel.load(weights);
    const trainer = new StagedBuiltinTrainer(model, config, version, !resume.policy);
    trainer.beginStep(resume.nextStep);
    const handler = new OptimizationHandler(deps.bus, {
      config, runId, prompts: runPrompts(config, resolveDataPath).train, trainer, engines: [], checkpointDir: dir,
      store: runEventSource(deps.store), mode: 'distributed', codeVersion: ev.data.codeVersion, durable: OPTIMIZATION_STEPS_DURABLE,
      rolloutExtras: distributedRolloutExtras(config),
      onStep: (step, stage, metrics) => {
        trainer.beginStep(step + 1);
        log('step completed', { runId, step, stage, rewardMean: metrics.rewardMean, passRate: metrics.passRate });
      },
    });
    try {
      return await handler.run();
    } finally {
      await handler.stop();
      model.dispose();
    }
  } finally {
    clearInterval(beat);
  }
}
