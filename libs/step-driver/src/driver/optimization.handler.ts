import { join } from 'node:path';
import { groupTimeoutBudgetS, ids, makeEvent, streams, type EventData, type RstarEvent, type RunConfig, RstarError } from '@rstar/contracts';
import type { EventBus, Subscription } from '@rstar/messaging';
import { buildTrainingBatch, splitByStaleness, type BatchGroup, type StalenessVerdict } from '@rstar/grpo';
import type { PolicyDelivery, PromptSource, RunEventSource, Trainer, TrainStepMetrics, WeightSync } from './ports';
import { maxStalenessOf, pickPrompts, samplingSeed, stageOf, totalSteps } from './step.plan';
import { resumePoint, type ResumePoint } from './run.resume';
import { StepCollector } from './step.collector';
import { GroupRefill } from './group.refill';
import { stepMetrics } from './step.metrics';
import { recordStepMetrics } from './step.prometheus';
import { inSpan, linksTo, SpanKind, startSpan, traceparentOfSpan, withoutActiveSpan, type Span } from '@rstar/telemetry';

export interface OptimizationDeps {
  config: RunConfig;
  runId: string;
  prompts: PromptSource;
  trainer: Trainer;
  /** Every inference engine; each gets the new weights after every update. */
  engines: readonly WeightSync[];
  /**
   * Distributed runs of the trainer worker: how the weights reach policy-serving's engines and the probe
   * that checks them ({@link PolicyDelivery}; docs/design/protocol.md §9). Absent: `StepOptimized` then
   * `PolicyUpdated`, and {@link engines} are updated from the checkpoint.
   */
  delivery?: PolicyDelivery;
  /** Checkpoints go to `<checkpointDir>/step-<n>`. */
  checkpointDir: string;
  /** The run's archived events, to resume after a restart (the trainer must already hold `resume.policy`). */
  store?: RunEventSource;
  mode?: 'standalone' | 'distributed';
  codeVersion?: string;
  /**
   * The durable consumer of the run's groups (default `optimization-<runId>`). The optimization service
   * drives one run at a time on `optimization-steps`, the name its NATS permissions grant (a per-run name
   * could not be granted to it alone).
   */
  durable?: string;
  /** Called after each StepCompleted (progress bars, one-line summaries). */
  onStep?: (step: number, stage: string, metrics: Record<string, number | null>) => void;
  /** Clock in ms for the phase timings. */
  now?: () => number;
  /**
   * Added to every `RolloutRequested` (Hugging Face policies): the prompt format of the run's SFT traces and
   * the tokenizer hash of its model, which policy-serving checks against its own tokenizer; distributed runs:
   * the config's engines and scheduler, which policy-serving samples on ({@link distributedRolloutExtras}).
   */
  rolloutExtras?: { prompt?: { compact: boolean }; tokenizerHash?: string; engines?: RunConfig['engines']; scheduler?: RunConfig['scheduler'] };
}

/**
 * What every `RolloutRequested` of a distributed run carries so that policy-serving samples it on the run
 * config's engines with its scheduler (and KV budgets), not on its own RSTAR_ENGINES / RSTAR_SCHEDULER.
 */
export function distributedRolloutExtras(config: RunConfig): { engines: RunConfig['engines']; scheduler: RunConfig['scheduler'] } {
  return { engines: config.engines.map((e) => ({ kind: e.kind, url: e.url, kvCapacityTokens: e.kvCapacityTokens })), scheduler: config.scheduler };
}

/** Another stage failed the run (`RunFailed` on the log, e.g. policy-serving on a weight-sync mismatch). */
export class RunAbortedError extends RstarError {
  constructor(step: number, readonly reason: string) {
    super('run_aborted', `run failed while step ${step} waited for its groups: ${reason}`);
  }
}

/** The run was stopped (`stop()`) while a step was waiting for its groups. */
export class RunStoppedError extends RstarError {
  constructor(step: number) {
    super('run_stopped', `run stopped while step ${step} waited for its groups`);
  }
}

export interface RunSummary {
  runId: string;
  steps: number;
  policyVersion: number;
  /** Metrics of every step run by this call (resumed steps before it are not repeated). */
  history: Array<{ step: number; stage: string; metrics: Record<string, number | null> }>;
}

const PRODUCER = 'optimization';

/**
 * The step driver (docs/design/architecture.md §5 optimization, docs/design/protocol.md §5-6). Per step: pick prompts (seeded), emit
 * `StepStarted` and 2G `RolloutRequested` per prompt, wait for every group's `GroupResampled` and the
 * `RolloutCompleted` of its rollouts (asking for extra groups for those dropped as all-equal when
 * `roc.maxExtraGroups` is set: {@link GroupRefill}), build the batch, train, checkpoint, emit `StepOptimized` and
 * `PolicyUpdated`, update every engine, emit `StepCompleted` with the metrics. Wraps the run in
 * `RunStarted` and `RunCompleted`/`RunFailed`. Every event id is deterministic, so a resumed run
 * re-emits the same ids and the bus drops the copies; `resumePoint` over the run's events says where to
 * go on. A step whose groups were all dropped trains nothing and emits no policy update.
 *
 * Bounded staleness (`async.maxStaleness` η >= 1, docs/design/protocol.md §10): before waiting for step
 * s's groups the driver requests steps s+1..s+η too (each at the policy version it holds then), so the
 * engines generate them while s trains; when s trains, a kept rollout started under a version more than
 * η behind the trainer's is left out of the batch with a `RolloutDiscarded`. With η = 0 every step is
 * requested only after the previous one completed: the synchronous barrier, unchanged.
 */
/** A requested step: its group ids (extra groups appended as they are requested) and its dynamic sampling. */
interface StepRequests {
  groupIds: string[];
  refill: GroupRefill;
  /** The `RolloutRequested` events of group `promptIdx` on prompt `poolIdx` of this step. */
  requestsOf: (poolIdx: number, promptIdx: number) => RstarEvent<'RolloutRequested'>[];
}

export class OptimizationHandler {
  private readonly collector: StepCollector;
  private sub: Subscription | null = null;
  private stopped = false;
  private readonly now: () => number;
  /** Steps whose rollouts are requested (this process or, resumed, the log): their group ids. */
  private readonly requested = new Map<number, StepRequests>();
  /** Prompt index of each prompt id in the pool (built on first use, to re-issue a recorded step). */
  private poolIndex: Map<string, number> | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly deps: OptimizationDeps,
  ) {
    this.collector = new StepCollector(deps.runId);
    this.now = deps.now ?? Date.now;
  }

  /** Subscribe to the run's resampled groups and completed rollouts (durable {@link OptimizationDeps.durable}). */
  async start(): Promise<void> {
    this.stopped = false;
    this.sub = await this.bus.subscribe({
      durable: this.deps.durable ?? `optimization-${this.deps.runId}`,
      types: ['GroupResampled', 'RolloutCompleted', 'RunFailed'],
      concurrency: 64,
      handler: async (e) => this.collector.add(e),
    });
  }

  /** Stop waiting (a pending `run()` rejects with {@link RunStoppedError}) and drain the subscription. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.collector.wake();
    await this.sub?.drain();
    this.sub = null;
  }

  /** Run (or resume) the whole run. Resolves with its summary; rejects after emitting `RunFailed`. */
  async run(): Promise<RunSummary> {
    if (!this.sub) await this.start();
    const { config, runId, trainer } = this.deps;
    const archived = this.deps.store ? await this.deps.store.readRun(runId) : [];
    for (const e of archived) this.collector.add(e);
    const resume = resumePoint(archived);
    const history: RunSummary['history'] = [];
    const total = totalSteps(config);
    if (!resume.started) {
      await this.emit('RunStarted', streams.run(runId), runId, {
        config: config as unknown as Record<string, unknown>, seed: config.seed,
        codeVersion: this.deps.codeVersion ?? 'dev', mode: this.deps.mode ?? 'standalone',
      });
    }
    if (resume.finished) return { runId, steps: resume.nextStep, policyVersion: trainer.version, history };
    let step = resume.nextStep;
    this.requested.clear();
    try {
      for (; step < total; step++) {
        const m = await this.runStep(step, resume);
        history.push(m);
        this.deps.onStep?.(m.step, m.stage, m.metrics);
      }
      const last = history.at(-1)?.metrics ?? {};
      await this.emit('RunCompleted', streams.run(runId), runId, { steps: total, summary: { policyVersion: trainer.version, last } });
      return { runId, steps: total, policyVersion: trainer.version, history };
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      if (!(e instanceof RunStoppedError) && !(e instanceof RunAbortedError)) await this.emit('RunFailed', streams.run(runId), runId, { error: msg, step }).catch(() => undefined);
      throw e;
    }
  }

  /**
   * One step inside its span `step <n>` (a trace of its own). Each rollout is a trace of its own too: its
   * `RolloutRequested` is published in a producer span `rollout` that links back to the step, and the
   * stages' spans continue that trace. The update's span `optimize` links to the kept rollouts' traces.
   */
  private runStep(step: number, resume: ResumePoint): Promise<RunSummary['history'][number]> {
    const attributes = { 'rstar.run.id': this.deps.runId, 'rstar.step': step, 'rstar.stage': stageOf(this.deps.config, step).stage.name };
    return inSpan(`step ${step}`, { root: true, attributes }, (span) => this.runStepTraced(step, resume, span));
  }

  private async runStepTraced(step: number, resume: ResumePoint, stepSpan: Span): Promise<RunSummary['history'][number]> {
    const { config, runId, trainer } = this.deps;
    const { stage } = stageOf(config, step);
    const t0 = this.now();
    const stepKey = `${runId}:${step}`;
    const eta = maxStalenessOf(config);
    // The window: this step and the η after it (never past the run's last step).
    const last = Math.min(step + eta, totalSteps(config) - 1);
    for (let t = step; t <= last; t++) if (!this.requested.has(t)) await this.requestStep(t, resume, stepSpan);
    const { groupIds, refill, requestsOf } = this.requested.get(step)!;

    for (;;) {
      // Refill hook (group.refill.ts): extra groups for those dropped as all-equal; none when maxExtraGroups is 0.
      const extra = refill.due(this.collector.groups);
      if (extra.length > 0) {
        groupIds.push(...extra.map((g) => g.groupId));
        await this.publishRequests(extra.flatMap((g) => requestsOf(g.poolIdx, g.promptIdx)), stepSpan);
        continue;
      }
      if (this.collector.complete(groupIds)) break;
      if (this.stopped) throw new RunStoppedError(step);
      if (this.collector.failed) throw new RunAbortedError(step, this.collector.failed.error);
      await this.collector.changed();
    }
    const tRollouts = this.now();
    const groups = groupIds.map((g) => this.collector.groups.get(g)!);
    for (const g of groups) {
      if (g.groupDropped === 'all_equal' && Object.values(g.rewards).every((r) => r > 0) && !resume.solvedPromptIds.has(g.promptId)) resume.solvedPromptIds.set(g.promptId, step);
    }
    // The trainer's version before this step's update (a step trained before a restart: the recorded one's).
    const trainVersion = resume.optimizedNext && resume.optimizedNext.step === step ? resume.optimizedNext.newPolicyVersion - 1 : trainer.version;
    const staleness = eta > 0 ? await this.discardStale(step, groups, trainVersion, eta) : null;
    // The engines must still serve the version the step sampled with before it trains on their rollouts.
    if (this.deps.delivery && !(resume.optimizedNext && resume.optimizedNext.step === step)) await this.deps.delivery.verify(trainVersion);
    const batchGroups: BatchGroup[] = groups
      .map((g) => ({ g, kept: staleness ? g.kept.filter((id) => !staleness.stale.has(id)) : g.kept }))
      .filter(({ kept }) => kept.length > 0)
      .map(({ g, kept }) => ({
        groupId: g.groupId,
        rollouts: kept.map((id) => {
          const r = this.collector.rollouts.get(id)!;
          return { rolloutId: id, reward: g.rewards[id], promptTokenIds: r.promptTokenIds, responseTokenIds: r.responseTokenIds, logprobs: r.logprobs, lossMask: r.lossMask };
        }),
      }));
    const batch = buildTrainingBatch(batchGroups);
    let train: TrainStepMetrics | null = null;
    const timings: Record<string, number> = { rollouts: tRollouts - t0, train: 0, checkpoint: 0, sync: 0 };
    const kept = batchGroups.flatMap((g) => g.rollouts.map((r) => this.collector.traceparents.get(r.rolloutId)));
    if (batch.sequences.length > 0) await inSpan('optimize', { links: linksTo(kept), attributes: { 'rstar.batch.sequences': batch.sequences.length, 'rstar.batch.tokens': batch.tokens } }, async () => {
      let optimized = resume.optimizedNext && resume.optimizedNext.step === step ? resume.optimizedNext : null;
      if (optimized) {
        // Trained before a crash: the trainer was restored from that checkpoint; do not train twice.
        train = trainMetricsOf(optimized);
        // With a delivery StepOptimized follows the delivery and its probe: both are done (their PolicyUpdated is on the log).
        if (this.deps.delivery) return;
      } else {
        const a = this.now();
        train = await inSpan('train', {}, async (span) => {
          const t = await trainer.trainStep(batch, { runId, step });
          span.setAttributes({ 'rstar.train.loss': t.loss, 'rstar.train.clip_fraction': t.clipFraction, 'rstar.train.kl': t.approxKl, 'rstar.train.grad_norm': t.gradNorm });
          return t;
        });
        const b = this.now();
        const ckpt = await inSpan('checkpoint', {}, async () => trainer.save(join(this.deps.checkpointDir, `step-${step}`)));
        timings.train = b - a;
        timings.checkpoint = this.now() - b;
        optimized = {
          step, loss: train.loss, clipFraction: train.clipFraction, approxKl: train.approxKl, entropy: train.entropy, gradNorm: train.gradNorm,
          advantageMean: batch.advantageMean, advantageStd: batch.advantageStd, tokens: batch.tokens,
          rollouts: batch.sequences.length, batchHash: batch.hash, newPolicyVersion: trainer.version,
          checkpointUri: ckpt.uri, checkpointHash: ckpt.hash,
          ...workerFields(train),
        };
        const { delivery } = this.deps;
        if (delivery) {
          // Deliver first, so StepOptimized records how the engines scored the probe on the new weights.
          const update = { version: optimized.newPolicyVersion, checkpointUri: optimized.checkpointUri, checkpointHash: optimized.checkpointHash };
          const c = this.now();
          const sync = await delivery.describe(update, step);
          await this.emit('PolicyUpdated', streams.run(runId), stepKey, { ...update, ...(sync ? { sync } : {}) });
          const weightProbe = await inSpan('weight_sync', { attributes: { 'rstar.policy.version': update.version, 'rstar.weight_sync': sync ? 'distributed' : 'disk' } }, () => delivery.deliver(update, sync));
          timings.sync = this.now() - c;
          optimized = { ...optimized, weightProbe };
          await this.emit('StepOptimized', streams.step(runId, step), stepKey, optimized);
          return;
        }
        await this.emit('StepOptimized', streams.step(runId, step), stepKey, optimized);
      }
      const update = { version: optimized.newPolicyVersion, checkpointUri: optimized.checkpointUri, checkpointHash: optimized.checkpointHash };
      await this.emit('PolicyUpdated', streams.run(runId), stepKey, update);
      const c = this.now();
      await inSpan('weight_sync', { attributes: { 'rstar.policy.version': update.version, 'rstar.engines': this.deps.engines.length } }, async () => {
        await Promise.all(this.deps.engines.map((e) => e.updateWeights(update)));
      });
      timings.sync = this.now() - c;
    });
    timings.step = this.now() - t0;
    const metrics = stepMetrics({ groups, rollouts: this.collector.rollouts, train, timings, policyVersion: trainer.version });
    metrics.batchTokens = batch.tokens;
    Object.assign(metrics, refill.metrics(groups));
    if (staleness) {
      const ss = staleness.entered.map((v) => v.staleness);
      metrics.maxStaleness = eta;
      metrics.staleRolloutsDiscarded = staleness.stale.size;
      metrics.stalenessMax = ss.length ? Math.max(...ss) : null;
      metrics.stalenessMean = ss.length ? ss.reduce((a, b) => a + b, 0) / ss.length : null;
    }
    await this.emit('StepCompleted', streams.step(runId, step), stepKey, { step, stage: stage.name, metrics });
    recordStepMetrics(runId, stage.name, step, metrics);
    this.collector.forget(groupIds);
    this.requested.delete(step);
    return { step, stage: stage.name, metrics };
  }

  /**
   * Publish a step's `RolloutRequested` events, each in a producer span `rollout` of its own trace linked to
   * the step's span, published outside the step's span so that each keeps the trace of its own rollout.
   */
  private async publishRequests(requests: RstarEvent<'RolloutRequested'>[], stepSpan: Span): Promise<void> {
    const { runId } = this.deps;
    for (const req of requests) {
      const d = req.data;
      const span = startSpan('rollout', {
        root: true, kind: SpanKind.PRODUCER, links: [{ context: stepSpan.spanContext() }],
        attributes: { 'rstar.run.id': runId, 'rstar.step': d.step, 'rstar.rollout.id': d.rolloutId, 'rstar.group.id': d.groupId, 'rstar.prompt.id': d.promptId },
      });
      req.meta.traceparent = traceparentOfSpan(span) ?? req.meta.traceparent;
      span.end();
    }
    await withoutActiveSpan(() => this.bus.publish(requests));
  }

  /**
   * Publish step `step`'s `StepStarted` and its 2G `RolloutRequested` per prompt (each in a producer span
   * `rollout` of its own trace, linked to `span`). A step on the log (`resume.inFlight`) is re-issued with
   * its recorded prompts and policy version, so every event is identical to the first; otherwise the
   * prompts are drawn (seeded) leaving out, in `filterSolved` stages, the prompts solved before step
   * `step - η` (what the driver knew when it asked), at the trainer's current version. Also prepares the
   * step's dynamic sampling (group.refill.ts): the prompts after the drawn ones in the same seeded order,
   * for extra groups replacing those dropped as all-equal.
   */
  private async requestStep(step: number, resume: ResumePoint, span: Span): Promise<void> {
    const { config, runId, prompts, trainer } = this.deps;
    const { stage } = stageOf(config, step);
    const eta = maxStalenessOf(config);
    const recorded = resume.inFlight.get(step);
    const known = [...resume.solvedPromptIds].filter(([, at]) => at < step - eta).map(([id]) => id);
    const solved = new Set(known);
    const exclude = stage.filterSolved
      ? new Set(Array.from({ length: prompts.size }, (_, i) => i).filter((i) => solved.has(prompts.get(i).promptId)))
      : undefined;
    const picked = recorded
      ? recorded.promptIds.map((id) => this.promptIndexOf(id))
      : pickPrompts({ runSeed: config.seed, step, poolSize: prompts.size, count: stage.promptsPerStep, exclude });
    const maxExtraGroups = config.roc.maxExtraGroups ?? 0;
    const extraPoolIdx = maxExtraGroups > 0
      ? pickPrompts({ runSeed: config.seed, step, poolSize: prompts.size, count: stage.promptsPerStep + maxExtraGroups, exclude }).slice(picked.length)
      : [];
    const refill = new GroupRefill({ runId, step, base: picked.length, extraPoolIdx, maxExtraGroups });
    const policyVersion = recorded?.policyVersion ?? trainer.version;
    const samples = stage.groupSize * stage.oversample;
    const groupIds = picked.map((_, promptIdx) => ids.group(runId, step, promptIdx));
    const started = this.event('StepStarted', streams.step(runId, step), `${runId}:${step}`, {
      step, stage: stage.name, promptIds: picked.map((i) => prompts.get(i).promptId), policyVersion,
    });
    const timeoutS = groupTimeoutBudgetS(config, stage);
    const requestsOf = (poolIdx: number, promptIdx: number): RstarEvent<'RolloutRequested'>[] => {
      const p = prompts.get(poolIdx);
      return Array.from({ length: samples }, (_, sampleIdx) => {
        const rolloutId = ids.rollout(runId, step, promptIdx, sampleIdx);
        return makeEvent('RolloutRequested', {
          runId, streamId: streams.rollout(rolloutId), key: rolloutId, producer: PRODUCER, causedBy: started,
          data: {
            rolloutId, groupId: ids.group(runId, step, promptIdx), step, promptIdx, sampleIdx, promptId: p.promptId, problem: p.problem, gold: p.gold,
            samplingParams: { temperature: stage.temperature, topP: stage.topP, seed: samplingSeed(config.seed, step, promptIdx, sampleIdx) },
            budget: { maxTokens: stage.maxResponseTokens, maxTurns: stage.maxTurns },
            tool: config.tool.name, policyVersion, ...this.deps.rolloutExtras, ...(config.async?.partialRollouts ? { partialRollouts: true } : {}),
            resample: {
              expected: samples, keep: stage.groupSize, mode: config.roc.enabled ? config.roc.mode : 'none',
              runSeed: config.seed, timeoutS,
            },
          },
        });
      });
    };
    await this.bus.publish(started);
    await this.publishRequests(picked.flatMap((poolIdx, promptIdx) => requestsOf(poolIdx, promptIdx)), span);
    this.requested.set(step, { groupIds, refill, requestsOf });
  }

  /** The pool index of a recorded prompt id (a step re-issued after a restart). Throws when the pool lacks it. */
  private promptIndexOf(promptId: string): number {
    const { prompts } = this.deps;
    if (!this.poolIndex) {
      this.poolIndex = new Map();
      for (let i = prompts.size - 1; i >= 0; i--) this.poolIndex.set(prompts.get(i).promptId, i);
    }
    const i = this.poolIndex.get(promptId);
    if (i === undefined) throw new RstarError('prompt_not_in_pool', `the run's log names prompt ${promptId}, which its prompt pool does not hold (was the dataset changed since the run started?)`, 'data');
    return i;
  }

  /**
   * Bounded staleness of one step (docs/design/protocol.md §10): splits the groups' kept rollouts by
   * {@link splitByStaleness} against `trainVersion` and publishes a `RolloutDiscarded` (id from the rollout,
   * so a resumed driver re-publishes the same one) for each stale rollout. Returns the discarded ids and
   * the verdicts of the rollouts that enter the batch.
   */
  private async discardStale(step: number, groups: readonly EventData<'GroupResampled'>[], trainVersion: number, eta: number): Promise<{ stale: Set<string>; entered: StalenessVerdict[] }> {
    const { runId } = this.deps;
    const kept = groups.flatMap((g) => g.kept.map((id) => ({ rolloutId: id, policyVersion: this.collector.rollouts.get(id)!.policyVersion })));
    const split = splitByStaleness(kept, trainVersion, eta);
    const groupOf = new Map(groups.flatMap((g) => g.kept.map((id) => [id, g.groupId] as const)));
    const events = split.stale.map((v) => makeEvent('RolloutDiscarded', {
      runId, streamId: streams.rollout(v.rolloutId), key: v.rolloutId, producer: PRODUCER,
      data: { rolloutId: v.rolloutId, groupId: groupOf.get(v.rolloutId)!, step, reason: 'stale', policyVersion: v.policyVersion, trainPolicyVersion: trainVersion, staleness: v.staleness, maxStaleness: eta },
    }));
    if (events.length) await this.bus.publish(events);
    return { stale: new Set(split.stale.map((v) => v.rolloutId)), entered: split.fresh };
  }

  private event<T extends 'StepStarted' | 'StepOptimized' | 'PolicyUpdated' | 'StepCompleted' | 'RunStarted' | 'RunCompleted' | 'RunFailed'>(
    type: T, streamId: string, key: string, data: EventData<T> | Record<string, unknown>,
  ): RstarEvent<T> {
    return makeEvent(type, { runId: this.deps.runId, streamId, key, data: data as never, producer: PRODUCER });
  }

  private async emit<T extends 'StepStarted' | 'StepOptimized' | 'PolicyUpdated' | 'StepCompleted' | 'RunStarted' | 'RunCompleted' | 'RunFailed'>(
    type: T, streamId: string, key: string, data: EventData<T> | Record<string, unknown>,
  ): Promise<void> {
    await this.bus.publish(this.event(type, streamId, key, data) as RstarEvent);
  }
}

/** The trainer-worker figures of a step's metrics, as `StepOptimized` carries them (absent for the builtin trainer). */
function workerFields(t: TrainStepMetrics): Partial<EventData<'StepOptimized'>> {
  const out: Partial<EventData<'StepOptimized'>> = {};
  if (t.dualClipFraction !== undefined) out.dualClipFraction = t.dualClipFraction;
  if (t.updates !== undefined) out.updates = t.updates;
  if (t.lr !== undefined) out.lr = t.lr;
  if (t.batchFileHash !== undefined) out.batchFileHash = t.batchFileHash;
  if (t.logprobDrift !== undefined) out.logprobDrift = t.logprobDrift;
  if (t.tis !== undefined) out.tis = t.tis;
  return out;
}

/** The metrics of a step recorded by its `StepOptimized` (a step trained before a restart). */
function trainMetricsOf(o: EventData<'StepOptimized'>): TrainStepMetrics {
  const { loss, clipFraction, approxKl, entropy, gradNorm, dualClipFraction, updates, lr, batchFileHash, logprobDrift, tis } = o;
  const t: TrainStepMetrics = { loss, clipFraction, approxKl, entropy, gradNorm };
  return { ...t, ...Object.fromEntries(Object.entries({ dualClipFraction, updates, lr, batchFileHash, logprobDrift, tis }).filter(([, v]) => v !== undefined)) };
}
