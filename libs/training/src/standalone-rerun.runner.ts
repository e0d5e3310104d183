import { groupTimeoutBudgetS, makeEvent, parseRunConfig, streams, type RstarEvent, type RunConfig } from '@rstar/contracts';
import type { Runtime } from '@rstar/runtime';
import { createEngines, startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { ReplayError, compareRerun, indexRun, rerunStep, type RerunComparison, type RerunPlan } from '@rstar/replay';
import { SandboxPool } from '@rstar/sandbox';
import { readRunEvents, stageOf } from '@rstar/step-driver';
import { startRolloutServices, type RolloutServices } from './rollout-services.starter';
import { policyCheckpointOf } from './step.retrainer';

/** Options of {@link rerunStepStandalone}. */
export interface StandaloneRerunOptions {
  /** The original run's events (from its archive or a history file). */
  events: Iterable<RstarEvent>;
  runId: string;
  step: number;
  /** Id of the rerun (default a new UUIDv7). */
  newRunId?: string;
  /** The original run's folder: its initial checkpoint (`checkpoints/sft`) when the step ran on policy version 0. */
  runDir: string;
  /** In-process bus + archive the rerun is published to and recorded in (the caller opens and closes it). */
  runtime: Runtime;
  /** Sandbox zygotes (default 2). */
  sandboxWorkers?: number;
  /** Give up waiting for the step's groups after this long (default: the groups' recorded time budget, else the step's `groupTimeoutBudgetS`, + 120 s). */
  timeoutMs?: number;
  onLine?: (line: string) => void;
}

/** What {@link rerunStepStandalone} returns. */
export interface StandaloneRerunResult {
  plan: RerunPlan;
  /** The checkpoint the engine served (the step's policy version). */
  checkpoint: string;
  /** The rerun's recorded events. */
  events: RstarEvent[];
  comparison: RerunComparison;
}

/**
 * `rstar replay rerun RUN --step N` without running services (standalone): builds the rerun
 * plan ({@link rerunStep}: the step's StepStarted and RolloutRequested under a new run id, `rerunOf`
 * linking the original), starts the rollout path in this process exactly as `rstar train` wires it
 * ({@link startRolloutServices}) with the built-in engine serving the checkpoint of the policy version
 * that sampled the step's first rollouts ({@link policyCheckpointOf}), publishes the plan on `runtime`'s
 * bus, waits until every group of the step is resampled (or timed out by the resampler), and compares the
 * rerun with the original rollout by rollout ({@link compareRerun}).
 * An asynchronous step whose rollouts were sampled under several versions (an update reached the engines
 * between them, `RerunPlan.phases`) is re-run phase by phase: each phase's requests are published once
 * the previous phase's rollouts completed and the engine loaded the phase's weights (a `PolicyUpdated` of
 * the rerun run carrying the original's checkpoint of that version), so every rollout samples on the
 * weights it sampled on originally.
 * @throws ReplayError `no_run_config` (no RunStarted or no valid config in the log), `checkpoint_missing` (the weights of the
 *   step's policy version are gone), `rerun_timeout`; NotInRunError for an unknown step.
 */
export async function rerunStepStandalone(o: StandaloneRerunOptions): Promise<StandaloneRerunResult> {
  const say = o.onLine ?? (() => undefined);
  const ix = indexRun(o.events, o.runId);
  if (!ix.started) throw new ReplayError('no_run_config', `run ${o.runId} has no RunStarted in the log, so its config (engine, tool limits) is unknown`, 'run');
  let config: RunConfig;
  try {
    config = parseRunConfig(ix.started.config);
  } catch (e) {
    throw new ReplayError('no_run_config', `run ${o.runId} records no valid run config, so no engine or tool limits to re-run it with (${(e as Error).message}); rerun a run recorded by \`rstar train\``, 'run');
  }
  const plan = rerunStep(ix, { step: o.step, newRunId: o.newRunId, mode: 'standalone' });
  const requests = plan.events.filter((e): e is RstarEvent<'RolloutRequested'> => e.type === 'RolloutRequested');
  const checkpoints = plan.phases.map((p) => {
    const dir = policyCheckpointOf(ix, p.policyVersion, o.runDir);
    if (dir) return dir;
    throw new ReplayError(
      'checkpoint_missing',
      `the weights of policy version ${p.policyVersion} (step ${o.step} of run ${o.runId}) are not on disk under ${o.runDir}; pass --data-dir <run folder>/events of the run that wrote them`,
      'step',
    );
  });
  const version = plan.phases[0].policyVersion;
  const checkpoint = checkpoints[0];
  const groups = new Set(requests.map((e) => e.data.groupId));
  const { bus, store } = o.runtime;
  const resampled = new Set<string>();
  const completed = new Set<string>();
  const watch = await bus.subscribe({
    durable: `replay-rerun-${plan.runId}`,
    types: ['GroupResampled', 'RolloutCompleted'],
    concurrency: 1,
    handler: async (e) => {
      if (e.runId === plan.runId && e.type === 'GroupResampled') resampled.add(e.data.groupId);
      if (e.runId === plan.runId && e.type === 'RolloutCompleted') completed.add(e.data.rolloutId);
    },
  });
  const sandbox = new SandboxPool({ workers: o.sandboxWorkers ?? 2, onWarning: (m) => say(`sandbox: ${m}`) });
  let engine: BuiltinEngine | null = null;
  let services: RolloutServices | null = null;
  try {
    await sandbox.start();
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: checkpoint, kvCapacityTokens: config.engines[0]?.kvCapacityTokens ?? config.policy.model.context * 64 });
    services = await startRolloutServices({
      bus, store, runId: plan.runId, config, sandbox, engines: createEngines([`builtin=${engine.url}`]), tokenizer: engine.model.tokenizer, initialPolicyVersion: version,
    });
    const versions = plan.phases.map((p) => `${p.rolloutIds.length} on policy version ${p.policyVersion}`).join(', then ');
    say(`rerun ${plan.runId} of run ${o.runId} step ${o.step}: ${requests.length} rollouts in ${groups.size} groups, ${versions} (${checkpoint})`);
    for (const m of plan.multiVersion) say(`partial rollout ${m.originalRolloutId}: ${m.reason}`);
    // The resampler times each group out after the budget its requests carry; wait a little longer than that.
    const budgetS = Math.max(0, ...requests.map((e) => e.data.resample?.timeoutS ?? 0)) || groupTimeoutBudgetS(config, stageOf(config, o.step).stage);
    const timeoutMs = o.timeoutMs ?? budgetS * 1000 + 120_000;
    const t0 = Date.now();
    const waitFor = async (what: string, done: () => boolean) => {
      while (!done()) {
        if (Date.now() - t0 > timeoutMs) throw new ReplayError('rerun_timeout', `rerun ${plan.runId}: ${what} after ${timeoutMs} ms (raise roc.groupTimeoutS or check the sandbox)`, 'step');
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const byId = new Map(requests.map((e) => [e.data.rolloutId, e]));
    const [head, ...later] = plan.phases;
    await bus.publish([...plan.events.filter((e) => e.type !== 'RolloutRequested'), ...head.rolloutIds.map((id) => byId.get(id)!)]);
    let previous = head;
    for (const [k, phase] of later.entries()) {
      await waitFor(`the rollouts of policy version ${previous.policyVersion} not all completed`, () => previous.rolloutIds.every((id) => completed.has(id)));
      const original = ix.policyUpdates.find((p) => p.version === phase.policyVersion)!;
      const update = { version: phase.policyVersion, checkpointUri: checkpoints[k + 1], checkpointHash: original.checkpointHash };
      await bus.publish(makeEvent('PolicyUpdated', { runId: plan.runId, streamId: streams.run(plan.runId), key: `${plan.runId}:rerun:${phase.policyVersion}`, producer: 'replay', data: update }));
      await waitFor(`policy-serving did not load policy version ${phase.policyVersion}`, () => services!.serving.policyVersion >= phase.policyVersion);
      say(`policy version ${phase.policyVersion} loaded: ${phase.rolloutIds.length} more rollouts`);
      await bus.publish(phase.rolloutIds.map((id) => byId.get(id)!));
      previous = phase;
    }
    let shown = -1;
    while (resampled.size < groups.size) {
      if (Date.now() - t0 > timeoutMs) {
        throw new ReplayError('rerun_timeout', `rerun ${plan.runId}: ${resampled.size}/${groups.size} groups resampled after ${timeoutMs} ms (raise roc.groupTimeoutS or check the sandbox)`, 'step');
      }
      if (resampled.size !== shown) say(`groups resampled: ${(shown = resampled.size)}/${groups.size}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    say(`groups resampled: ${groups.size}/${groups.size}`);
  } finally {
    await watch.drain().catch(() => undefined);
    await services?.stop();
    await engine?.close();
    await sandbox.close();
  }
  await o.runtime.flush();
  const events = await readRunEvents(store, plan.runId);
  return { plan, checkpoint, events, comparison: compareRerun(ix, indexRun(events, plan.runId), o.step) };
}
