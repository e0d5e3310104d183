import type { EventData, RstarEvent } from '@rstar/contracts';
import type { EventBus, Subscription } from '@rstar/messaging';
import { TrackerError, type RolloutSample, type TrackedRun, type TrackerSink } from './tracker.port';

export interface TrackerFeedOptions {
  runId: string;
  sinks: readonly TrackerSink[];
  /** Rollouts of each step sent to the rollout table (the first graded ones, by prompt and sample; default 4, 0 = none). */
  sampleRollouts?: number;
  /** A sink failed; it is dropped and the run goes on (default: ignore). */
  onError?: (e: Error) => void;
  /** Durable consumer name (default `trackers-<runId>`). */
  durable?: string;
  /** The run, when the caller knows it: the sinks start at once (a resumed run publishes no new RunStarted). */
  run?: TrackedRun;
}

const RESPONSE_CHARS = 2000;

/**
 * Feeds a run's events from the bus to its tracker sinks: `RunStarted` starts them, each `StepCompleted`
 * logs the step's metrics, each `EvaluationCompleted` the held-out pass@1, the first `sampleRollouts`
 * graded rollouts of a step (their `RolloutCompleted` and `RewardAssigned`) go to the rollout table when
 * the step completes, and `RunCompleted`/`RunFailed` finishes them. A sink whose call fails is reported
 * once through `onError` and dropped: a tracker never stops training. `close()` waits until every event
 * published so far has been handled (the consumer's lag is 0), then finishes sinks not yet finished.
 */
export class TrackerFeed {
  private sub: Subscription | null = null;
  private sinks: TrackerSink[];
  private started = false;
  private finished = false;
  private readonly completed = new Map<string, EventData<'RolloutCompleted'>>();
  private readonly samples = new Map<number, RolloutSample[]>();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly bus: EventBus,
    private readonly o: TrackerFeedOptions,
  ) {
    this.sinks = [...o.sinks];
  }

  async start(): Promise<void> {
    if (this.o.run) {
      this.started = true;
      const run = this.o.run;
      await this.each((s) => s.start(run));
    }
    this.sub = await this.bus.subscribe({
      durable: this.o.durable ?? `trackers-${this.o.runId}`,
      types: ['RunStarted', 'StepCompleted', 'EvaluationCompleted', 'RolloutCompleted', 'RewardAssigned', 'RunCompleted', 'RunFailed'],
      concurrency: 1,
      handler: async (e) => {
        if (e.runId !== this.o.runId) return;
        // One event at a time, in delivery order, so a step's metrics reach the trackers in step order.
        this.queue = this.queue.then(() => this.handle(e as RstarEvent));
        await this.queue;
      },
    });
  }

  /** Wait until every event published so far is handled, finish the sinks, stop consuming. */
  async close(status: 'completed' | 'failed' = 'completed'): Promise<void> {
    const sub = this.sub;
    if (sub) {
      for (let i = 0; i < 6000 && (await sub.lag()) > 0; i++) await new Promise((r) => setTimeout(r, 20));
      await sub.drain();
      this.sub = null;
    }
    await this.queue;
    if (this.started && !this.finished) await this.each((s) => s.finish(status));
    this.finished = true;
  }

  private async handle(e: RstarEvent): Promise<void> {
    const at = Date.parse(e.meta.recordedAt);
    switch (e.type) {
      case 'RunStarted': {
        if (this.started) return;
        this.started = true;
        const cfg = e.data.config as { name?: unknown };
        const run: TrackedRun = { runId: e.runId, name: typeof cfg.name === 'string' ? cfg.name : 'run', config: e.data.config, seed: e.data.seed, codeVersion: e.data.codeVersion, mode: e.data.mode };
        await this.each((s) => s.start(run));
        return;
      }
      case 'RolloutCompleted':
        if ((this.o.sampleRollouts ?? 4) > 0) this.completed.set(e.data.rolloutId, e.data);
        return;
      case 'RewardAssigned': {
        const c = this.completed.get(e.data.rolloutId);
        const rows = this.samples.get(e.data.step) ?? [];
        if (!c || rows.length >= (this.o.sampleRollouts ?? 4)) return;
        this.completed.delete(e.data.rolloutId);
        rows.push({
          step: e.data.step, rolloutId: e.data.rolloutId, promptId: c.promptId, reward: e.data.reward, correct: e.data.correct, rule: e.data.rule,
          toolCalls: c.toolCalls, toolErrors: c.toolErrors, responseTokens: c.responseTokenIds.length, response: c.responseText.slice(0, RESPONSE_CHARS),
        });
        this.samples.set(e.data.step, rows);
        return;
      }
      case 'StepCompleted': {
        if (!this.started) return;
        await this.each((s) => s.logStep(e.data.step, e.data.stage, e.data.metrics, at));
        const rows = this.samples.get(e.data.step) ?? [];
        this.samples.delete(e.data.step);
        for (const [id, c] of this.completed) if (c.step <= e.data.step) this.completed.delete(id);
        await this.each((s) => s.logRollouts(e.data.step, rows));
        return;
      }
      case 'EvaluationCompleted':
        if (this.started) await this.each((s) => s.logEvaluation(e.data, at));
        return;
      case 'RunCompleted':
      case 'RunFailed':
        // The held-out evaluation after RL comes after RunCompleted: the sinks finish at close().
        return;
      default:
        return;
    }
  }

  /** Call every live sink; a sink that throws is reported and dropped. */
  private async each(f: (s: TrackerSink) => Promise<void>): Promise<void> {
    for (const s of [...this.sinks]) {
      try {
        await f(s);
      } catch (e) {
        this.sinks = this.sinks.filter((x) => x !== s);
        const err = e instanceof TrackerError ? e : new TrackerError('tracker_rejected', s.name, (e as Error).message, `trackers.${s.name}`);
        this.o.onError?.(err);
      }
    }
  }
}
