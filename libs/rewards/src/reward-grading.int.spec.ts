import { makeEvent, streams, type EventData, type RstarEvent } from '@rstar/contracts';
import { SympySandboxBackend } from '@rstar/grader';
import { JetStreamBus } from '@rstar/messaging';
import { SandboxPool } from '@rstar/sandbox';
import { createLogger } from '@rstar/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RewardGradingHandler } from './reward-grading.handler';
import { until } from '@rstar/testing';

const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const tag = `rg${process.pid}${Date.now().toString(36)}`;

function completed(i: number, responseText: string, gold: string): RstarEvent<'RolloutCompleted'> {
  const rolloutId = `rollout:${tag}:0:0:${i}`;
  const data: EventData<'RolloutCompleted'> = {
    rolloutId, groupId: `group:${tag}:0:0`, step: 0, promptId: 'p0', gold, engineId: 'e0', policyVersion: 0,
    promptTokenIds: [1], responseTokenIds: [2], logprobs: [0], lossMask: [1], responseText, turns: 1,
    toolCalls: 0, toolErrors: 0, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer',
  };
  return makeEvent('RolloutCompleted', { runId: tag, streamId: streams.rollout(rolloutId), key: rolloutId, producer: 'test', data });
}

describe('reward-grading over real NATS JetStream with sympy in the real sandbox', () => {
  let bus: JetStreamBus;
  let pool: SandboxPool;
  let handler: RewardGradingHandler;
  beforeAll(async () => {
    bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag, logger: createLogger('test', { write: () => undefined }) });
    pool = new SandboxPool({ workers: 1 });
    await pool.start();
    handler = new RewardGradingHandler(bus, { symbolic: new SympySandboxBackend(pool), timeoutMs: 1500 });
    await handler.start();
  });
  afterAll(async () => {
    await handler?.stop();
    await pool?.close();
    if (bus) {
      await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
      await bus.close();
    }
  });

  it('emits one RewardAssigned per rollout: fast path, sympy path, and a bounded hang', async () => {
    const got = new Map<string, RstarEvent<'RewardAssigned'>>();
    await bus.subscribe({ durable: 'probe', types: ['RewardAssigned'], handler: async (e) => void got.set(e.data.rolloutId, e) });
    const events = [
      completed(0, '<answer>$\\boxed{\\frac{9}{\\sqrt{23}}}$</answer>', '\\frac{9 \\sqrt{23}}{23}'),
      completed(1, '<answer>$\\boxed{\\sin(\\pi)}$</answer>', '0'),
      completed(2, '<answer>$\\boxed{2003^{2002^{2001}}}$</answer>', '1'),
    ];
    await bus.publish(events);
    await bus.publish(events[0]); // a duplicate delivery re-emits the same id, which the bus drops
    await until(() => got.size >= 3, 'three RewardAssigned');
    const r = events.map((e) => got.get(e.data.rolloutId)!.data);
    expect(r[0]).toMatchObject({ reward: 1, rule: 'numeric' });
    expect(r[1]).toMatchObject({ reward: 1, rule: 'sympy' });
    expect(r[2]).toMatchObject({ reward: 0, correct: false, rule: 'timeout' });
  });
});
