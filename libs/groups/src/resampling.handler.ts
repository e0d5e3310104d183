import { makeEvent, streams, type EventType, type RstarEvent } from '@rstar/contracts';
import type { EventBus, Subscription } from '@rstar/messaging';
import { counter, gauge } from '@rstar/telemetry';
import { GroupCollector, type GroupDecision, type GroupPolicy } from './group.collector';

const resampled = () => counter('rstar_groups_resampled_total', 'Groups decided by GRPO-RoC, per run and outcome (kept, all_equal, timeout)', ['run', 'outcome']);
const openGroups = () => gauge('rstar_groups_open', 'Groups still collecting their rollouts in this resampler');

/** Read access to the archived events, to rebuild the resampler's state after a restart. */
export interface ResamplingEventSource {
  /** Every archived event of these types (any order). */
  readEvents(types: readonly EventType[]): AsyncIterable<RstarEvent> | Promise<Iterable<RstarEvent>>;
}

export interface ResamplingHandlerOptions {
  /** Archive to rebuild open groups from on `start()` (rewards acked before a crash live only there). */
  store?: ResamplingEventSource;
  /** Group policy for rollouts whose `RolloutRequested` carries no `resample` field. */
  defaults?: GroupPolicy;
  /** Durable consumer name (default `resampling`). */
  durable?: string;
  /** How often timed-out groups are looked for, in ms (default 1000). */
  sweepMs?: number;
  /** Clock in ms (injectable for tests). */
  now?: () => number;
  concurrency?: number;
}

const INPUT_TYPES = ['RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'GroupResampled'] as const;

/**
 * The resampling service (docs/design/architecture.md §5, docs/design/protocol.md §5) as a plain class: consumes `RolloutRequested`,
 * `RolloutCompleted` and `RewardAssigned`, and publishes one `GroupResampled` per group (event id
 * `GroupResampled:<groupId>`) once all 2G rollouts are in, or with `groupDropped: 'timeout'` when the
 * group's timeout passes first. An event is acked only after any decision it completed is published.
 * Runs inside the NestJS app (distributed) or in-process (standalone `rstar train`).
 */
export class ResamplingHandler {
  readonly collector: GroupCollector;
  private sub: Subscription | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;
  private sweeping: Promise<void> | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly opts: ResamplingHandlerOptions = {},
  ) {
    this.collector = new GroupCollector(opts.defaults ?? null);
    this.now = opts.now ?? Date.now;
  }

  /** Rebuild from the archive (when given), publish what is already decided, subscribe, start the sweep. */
  async start(): Promise<void> {
    if (this.opts.store) {
      const events = await this.opts.store.readEvents(INPUT_TYPES);
      for await (const e of events as AsyncIterable<RstarEvent>) this.feed(e);
    }
    await this.publishDecisions();
    this.sub = await this.bus.subscribe({
      durable: this.opts.durable ?? 'resampling',
      types: INPUT_TYPES,
      concurrency: this.opts.concurrency ?? 16,
      handler: async (e) => {
        this.feed(e);
        await this.publishDecisions();
      },
    });
    this.timer = setInterval(() => void this.sweep(), this.opts.sweepMs ?? 1000);
    this.timer.unref();
  }

  /** Stop the sweep and drain the subscription (in-flight handlers finish). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sub?.drain();
    this.sub = null;
    await this.sweeping;
  }

  /** Publish timed-out groups now (also called by the periodic sweep). */
  async sweep(): Promise<void> {
    if (this.sweeping) return this.sweeping;
    this.sweeping = this.publishDecisions(this.now()).finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private feed(e: RstarEvent): void {
    const t = this.now();
    switch (e.type) {
      case 'RolloutRequested': return this.collector.onRequested(e.runId, e.data, t);
      case 'RolloutCompleted': return this.collector.onCompleted(e.runId, e.data, t);
      case 'RewardAssigned': return this.collector.onReward(e.runId, e.data, t);
      case 'GroupResampled': return this.collector.onResampled(e.data);
      default: return;
    }
  }

  private async publishDecisions(nowMs?: number): Promise<void> {
    const decisions = this.collector.decisions(nowMs);
    if (decisions.length === 0) return;
    await this.bus.publish(decisions.map(toEvent));
    for (const d of decisions) {
      this.collector.markPublished(d.data.groupId);
      resampled().inc({ run: d.runId, outcome: d.data.groupDropped ?? 'kept' });
    }
    openGroups().set(this.collector.open);
  }
}

/** The `GroupResampled` event of a decision; its id depends only on the group id. */
export function toEvent(d: GroupDecision): RstarEvent<'GroupResampled'> {
  return makeEvent('GroupResampled', {
    runId: d.runId, streamId: streams.group(d.data.groupId), key: d.data.groupId, data: d.data, producer: 'resampling',
  });
}
