import type { EventStore } from '@rstar/event-store';
import { withHeartbeat, type EventBus, type Subscription } from '@rstar/messaging';
import { launchDistributedRun, type LaunchDeps } from './distributed-run.launcher';
import { pipelineDurables, waitForConsumers } from './pipeline.consumers';

/**
 * The optimization service's run starter (distributed mode): consumes `RunStarted` with `mode:
 * distributed` (durable `optimization-runs`, one run at a time) and drives it with
 * {@link launchDistributedRun}. The message is acked only when the run has ended (the ack deadline is
 * extended meanwhile), so when the service is killed the run is redelivered to the next instance, which
 * resumes it from the archive (after the `ackWaitMs` option; the live handler extends the
 * deadline every third of it, so a short ack wait redelivers a dead instance's run sooner without redelivering a
 * live one's). Before a run starts it waits until every stage's consumer exists. Standalone runs (`mode: standalone`) and reruns of a recorded step
 * (`rerunOf` set, from `rstar replay rerun`) are ignored.
 */
export class RunStartConsumer {
  private sub: Subscription | null = null;
  /** Run being driven now, if any. */
  active: string | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly store: EventStore,
    private readonly opts: {
      /** The engines of a run (see `LaunchDeps.engines`): fixed, or from the run's config. */
      engines: LaunchDeps['engines'];
      checkpointRoot: string;
      /** The trainer worker of `trainer.kind: worker` runs (RSTAR_TRAINER_URL) and the shared batch directory (RSTAR_BATCH_DIR). */
      trainerUrl?: string;
      batchDir?: string;
      durable?: string;
      /** Consumers of the other stages that must exist before a run's first step (default {@link pipelineDurables}). */
      pipeline?: readonly string[];
      log?: (msg: string, fields?: Record<string, unknown>) => void;
      /**
       * Resolves once the archive holds everything published so far (e.g. the archiver's consumer caught
       * up); awaited before a run is read from the archive, calling `working` while it waits.
       */
      archiveCaughtUp?: (working: () => void) => Promise<void>;
      /**
       * Ack deadline of a RunStarted in ms (default 60 000): how long after a killed instance's last heartbeat
       * the next instance gets its run. The handler heartbeats every third of it while the run goes on.
       */
      ackWaitMs?: number;
    },
  ) {}

  async start(): Promise<void> {
    const ackWaitMs = this.opts.ackWaitMs ?? 60_000;
    this.sub = await this.bus.subscribe({
      durable: this.opts.durable ?? 'optimization-runs',
      types: ['RunStarted'],
      concurrency: 1,
      ackWaitMs,
      maxDeliver: 1_000,
      handler: async (ev, ctx) => {
        if (ev.data.mode !== 'distributed') return;
        // A `replay rerun` re-issues one recorded step's requests itself; driving it as a run would re-plan every step.
        if (ev.data.rerunOf) return;
        this.active = ev.runId;
        // Every phase of a run (the archive read, SFT, a long step) keeps the message this instance's while it lives.
        try {
          await withHeartbeat(ctx, ackWaitMs, async () => {
            // A stage that subscribes after the first RolloutRequested would start past it.
            await waitForConsumers(this.bus, this.opts.pipeline ?? pipelineDurables(), {
              onWait: (missing) => {
                ctx.working();
                this.opts.log?.('waiting for the stages to subscribe before starting the run', { runId: ev.runId, missing });
              },
              reportEveryMs: 5_000,
            });
            await this.opts.archiveCaughtUp?.(() => ctx.working());
            const r = await launchDistributedRun(ev, {
              bus: this.bus, store: this.store, engines: this.opts.engines, checkpointRoot: this.opts.checkpointRoot, working: () => ctx.working(), log: this.opts.log,
              trainerUrl: this.opts.trainerUrl, batchDir: this.opts.batchDir,
            });
            this.opts.log?.('run ended', { runId: ev.runId, steps: r?.steps ?? null });
          });
        } finally {
          this.active = null;
        }
      },
    });
  }

  async stop(): Promise<void> {
    await this.sub?.drain();
    this.sub = null;
  }
}
