import { makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { grade } from '@rstar/grader';
import type { EventBus, Subscription } from '@rstar/messaging';

/**
 * reward-grading's bus flow for standalone runs (PROTOCOL §4): `RolloutCompleted` -> libs/grader's
 * `grade(responseText, gold)` -> `RewardAssigned` (id `RewardAssigned:<rolloutId>`). Reward 1 only when
 * the answer is equivalent to the gold answer; truncated rollouts and rollouts without an answer get 0.
 * Used by `rstar train` while services/reward-grading has no handler to import; same events, same ids.
 */
export class AnswerRewardHandler {
  private sub: Subscription | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly opts: { durable?: string; concurrency?: number } = {},
  ) {}

  async start(): Promise<void> {
    this.sub = await this.bus.subscribe({
      durable: this.opts.durable ?? 'reward-grading',
      types: ['RolloutCompleted'],
      concurrency: this.opts.concurrency ?? 16,
      handler: async (ev) => this.onCompleted(ev),
    });
  }

  async stop(): Promise<void> {
    await this.sub?.drain();
    this.sub = null;
  }

  private async onCompleted(ev: RstarEvent<'RolloutCompleted'>): Promise<void> {
    const d = ev.data;
    const v = grade(d.responseText, d.gold);
    const correct = v.correct && !d.truncated;
    await this.bus.publish(
      makeEvent('RewardAssigned', {
        runId: ev.runId, streamId: streams.rollout(d.rolloutId), key: d.rolloutId, producer: 'reward-grading', causedBy: ev,
        data: {
          rolloutId: d.rolloutId, groupId: d.groupId, step: d.step, reward: correct ? 1 : 0, correct,
          extracted: v.extracted, gold: d.gold, normalizedPrediction: v.normalizedPrediction, normalizedGold: v.normalizedGold,
          rule: d.truncated && v.correct ? 'truncated' : v.rule, ms: v.ms,
        },
      }),
    );
  }
}
