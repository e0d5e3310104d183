import { makeEvent, streams, type EventData, type RstarEvent } from '@rstar/contracts';
import { gradeAsync, warmUp, type SymbolicBackend } from '@rstar/grader';
import { withHeartbeat, type EventBus, type Subscription } from '@rstar/messaging';
import { counter, histogram, inSpan } from '@rstar/telemetry';

/** Options of {@link RewardGradingHandler}. */
export interface RewardGradingOptions {
  /** sympy in the sandbox for checks the fast path cannot decide; without it they score 0. */
  symbolic?: SymbolicBackend;
  /** Limit of one offloaded check in ms (default 4000); past it the reward is 0 with rule `timeout`. */
  timeoutMs?: number;
  /** Durable consumer name (default `reward-grading`); replicas sharing it share the work. */
  durable?: string;
  /** Rollouts graded at once (default 16). */
  concurrency?: number;
  /**
   * Ack wait of the consumer in ms (default 30 000): how long a killed instance's rollouts wait before another
   * instance grades them. A grading in progress heartbeats every third of it.
   */
  ackWaitMs?: number;
}

const rewards = () => counter('rstar_rewards_total', 'Rewards assigned, by reward and deciding rule', ['reward', 'rule']);
const graded = () => counter('rstar_rollouts_graded_total', 'Rollouts graded, per run and reward (pass rate = reward 1 / all)', ['run', 'reward']);
const gradeSeconds = () =>
  histogram('rstar_grade_seconds', 'Time to grade one rollout', [], [0.0005, 0.001, 0.005, 0.02, 0.1, 0.5, 2, 5]);

/**
 * The reward of one completed rollout (docs/design/protocol.md §4): 1 when the answer extracted from the last
 * `\boxed{}` is equivalent to the gold answer (docs/design/grading.md), else 0; 0 for truncated and answerless
 * rollouts. The verdict's fields go into the event so a replay shows why. Never throws for bad answers.
 * With the rollout's problem (when the event carries it) the grader's problem-aware rules apply.
 */
export async function rewardFor(d: EventData<'RolloutCompleted'>, opts: RewardGradingOptions = {}): Promise<EventData<'RewardAssigned'>> {
  const v = await gradeAsync(d.responseText, d.gold, { symbolic: opts.symbolic, timeoutMs: opts.timeoutMs, problem: d.problem });
  const correct = v.correct && !d.truncated;
  return {
    rolloutId: d.rolloutId,
    groupId: d.groupId,
    step: d.step,
    reward: correct ? 1 : 0,
    correct,
    extracted: v.extracted,
    gold: d.gold,
    normalizedPrediction: v.normalizedPrediction,
    normalizedGold: v.normalizedGold,
    rule: d.truncated ? 'truncated' : v.rule,
    ms: v.ms,
  };
}

/**
 * reward-grading: consumes `RolloutCompleted`, emits `RewardAssigned` (id `RewardAssigned:<rolloutId>`,
 * stream `rollout-<rolloutId>`). Runs inside the Nest app (distributed) or in-process (standalone).
 * A redelivered rollout is graded again and re-emits the same id, which the bus drops.
 */
export class RewardGradingHandler {
  private sub: Subscription | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly opts: RewardGradingOptions = {},
  ) {}

  async start(): Promise<void> {
    if (this.sub) return;
    warmUp();
    const ackWaitMs = this.opts.ackWaitMs ?? 30_000;
    this.sub = await this.bus.subscribe({
      durable: this.opts.durable ?? 'reward-grading',
      types: ['RolloutCompleted'],
      concurrency: this.opts.concurrency ?? 16,
      ackWaitMs,
      handler: async (ev, ctx) => withHeartbeat(ctx, ackWaitMs, () => this.onCompleted(ev)),
    });
  }

  async stop(): Promise<void> {
    await this.sub?.drain();
    this.sub = null;
  }

  private async onCompleted(ev: RstarEvent<'RolloutCompleted'>): Promise<void> {
    const data = await inSpan('grade', { attributes: { 'rstar.rollout.id': ev.data.rolloutId, 'rstar.rollout.truncated': ev.data.truncated } }, async (span) => {
      const d = await rewardFor(ev.data, this.opts);
      span.setAttributes({ 'rstar.reward': d.reward, 'rstar.grade.rule': d.rule, 'rstar.grade.ms': d.ms ?? undefined, 'rstar.grade.correct': d.correct });
      return d;
    });
    rewards().inc({ reward: String(data.reward), rule: data.rule });
    graded().inc({ run: ev.runId, reward: String(data.reward) });
    if (data.ms !== null) gradeSeconds().observe(data.ms / 1000);
    await this.bus.publish(
      makeEvent('RewardAssigned', {
        runId: ev.runId,
        streamId: streams.rollout(data.rolloutId),
        key: data.rolloutId,
        producer: 'reward-grading',
        causedBy: ev,
        data,
      }),
    );
  }
}
