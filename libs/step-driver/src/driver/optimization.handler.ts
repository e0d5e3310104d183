import { join } from 'node:path';
import { groupTimeoutBudgetS, ids, makeEvent, streams, type EventData, type RstarEvent, type RunConfig, RstarError } from '@rstar/contracts';
import type { EventBus, Subscription } from '@rstar/messaging';
import { buildTrainingBatch, type BatchGroup } from '@rstar/grpo';
import type { PromptSource, RunEventSource, Trainer, TrainStepMetrics, WeightSync } from './ports';
import { pickPrompts, samplingSeed, stageOf, totalSteps } from './step.plan';
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
 */
export class OptimizationHandler {
  private readonly collector: StepCollector;
  private sub: Subscription | null = null;
  private stopped = false;
  private readonly now: () => number;

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
    const { config, runId, prompts, trainer } = this.deps;
    const { stage } = stageOf(config, step);
    const t0 = this.now();
    const stepKey = `${runId}:${step}`;
    const exclude = stage.filterSolved
      ? new Set(Array.from({ length: prompts.size }, (_, i) => i).filter((i) => resume.solvedPromptIds.has(prompts.get(i).promptId)))
      : undefined;
    const picked = pickPrompts({ runSeed: config.seed, step, poolSize: prompts.size, count: stage.promptsPerStep, exclude });
    // Dynamic sampling (group.refill.ts): the prompts after `picked` in the same seeded order, for extra groups.
    const maxExtraGroups = config.roc.maxExtraGroups ?? 0;
    const extraPoolIdx = maxExtraGroups > 0
      ? pickPrompts({ runSeed: config.seed, step, poolSize: prompts.size, count: stage.promptsPerStep + maxExtraGroups, exclude }).slice(picked.length)
      : [];
    const refill = new GroupRefill({ runId, step, base: picked.length, extraPoolIdx, maxExtraGroups });
    const policyVersion = trainer.version;
    const samples = stage.groupSize * stage.oversample;
    const groupIds = picked.map((_, promptIdx) => ids.group(runId, step, promptIdx));
    const started = this.event('StepStarted', streams.step(runId, step), stepKey, {
      step, stage: stage.name, promptIds: picked.map((i) => prompts.get(i).promptId), policyVersion,
    });
    const timeoutS = groupTimeoutBudgetS(config, stage);
    const requestsOf = (poolIdx: number, promptIdx: number) => {
      const p = prompts.get(poolIdx);
      return Array.from({ length: samples }, (_, sampleIdx) => {
        const rolloutId = ids.rollout(runId, step, promptIdx, sampleIdx);
        return makeEvent('RolloutRequested', {
          runId, streamId: streams.rollout(rolloutId), key: rolloutId, producer: PRODUCER, causedBy: started,
          data: {
            rolloutId, groupId: groupIds[promptIdx], step, promptIdx, sampleIdx, promptId: p.promptId, problem: p.problem, gold: p.gold,
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
    const requests = picked.flatMap((poolIdx, promptIdx) => requestsOf(poolIdx, promptIdx));
    await this.bus.publish(started);
    await this.publishRequests(requests, stepSpan);

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
    for (const g of groups) if (g.groupDropped === 'all_equal' && Object.values(g.rewards).every((r) => r > 0)) resume.solvedPromptIds.add(g.promptId);
    const batchGroups: BatchGroup[] = groups
      .filter((g) => g.kept.length > 0)
      .map((g) => ({
        groupId: g.groupId,
        rollouts: g.kept.map((id) => {
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
    await this.emit('StepCompleted', streams.step(runId, step), stepKey, { step, stage: stage.name, metrics });
    recordStepMetrics(runId, stage.name, step, metrics);
    this.collector.forget(groupIds);
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
