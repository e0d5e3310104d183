import { makeEvent, streams, type EventData, type RstarEvent } from '@rstar/contracts';
import type { SymbolicBackend } from '@rstar/grader';
import { InProcessBus } from '@rstar/messaging';
import { afterEach, describe, expect, it } from 'vitest';
import { RewardGradingHandler } from './reward-grading.handler';

function completed(i: number, over: Partial<EventData<'RolloutCompleted'>>): RstarEvent<'RolloutCompleted'> {
  const rolloutId = `rollout:run1:0:0:${i}`;
  return makeEvent('RolloutCompleted', {
    runId: 'run1',
    streamId: streams.rollout(rolloutId),
    key: rolloutId,
    producer: 'test',
    data: {
      rolloutId, groupId: 'group:run1:0:0', step: 0, promptId: 'p0', gold: '12', engineId: 'e0', policyVersion: 0,
      promptTokenIds: [1], responseTokenIds: [2], logprobs: [0], lossMask: [1], responseText: '', turns: 1,
      toolCalls: 0, toolErrors: 0, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer',
      ...over,
    },
  });
}

async function waitFor<T>(get: () => T | undefined): Promise<T> {
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setImmediate(r));
  }
}

describe('RewardGradingHandler (RolloutCompleted -> RewardAssigned)', () => {
  let bus: InProcessBus;
  let handler: RewardGradingHandler | undefined;
  afterEach(async () => {
    await handler?.stop();
    await bus.close();
  });

  async function run(events: RstarEvent<'RolloutCompleted'>[], symbolic?: SymbolicBackend) {
    bus = new InProcessBus({ subjectPrefix: `rg${Math.random().toString(36).slice(2)}` });
    const got = new Map<string, RstarEvent<'RewardAssigned'>>();
    await bus.subscribe({ durable: 'probe', types: ['RewardAssigned'], handler: async (e) => void got.set(e.data.rolloutId, e) });
    handler = new RewardGradingHandler(bus, { symbolic, timeoutMs: 100 });
    await handler.start();
    await bus.publish(events);
    await waitFor(() => (got.size === events.length ? true : undefined));
    return events.map((e) => got.get(e.data.rolloutId)!);
  }

  it('grades with the rollout\'s problem when the event carries it (a precision the problem asks for)', async () => {
    const problem = 'What is 3/11? Express your answer as a decimal to the nearest hundredth.';
    const [withProblem, without] = await run([
      completed(0, { gold: '\\frac{3}{11}', problem, responseText: '<answer>$\\boxed{0.27}$</answer>' }),
      completed(1, { gold: '\\frac{3}{11}', responseText: '<answer>$\\boxed{0.27}$</answer>' }),
    ]);
    expect(withProblem.data).toMatchObject({ reward: 1, correct: true, rule: 'rounding' });
    expect(without.data).toMatchObject({ reward: 0, correct: false });
  });

  it('rewards a correct answer 1 and a wrong, truncated or answerless rollout 0, with the verdict fields', async () => {
    const [ok, wrong, truncated, none] = await run([
      completed(0, { responseText: '<answer>so $\\boxed{12}$</answer>' }),
      completed(1, { responseText: '<answer>$\\boxed{1}$</answer>' }),
      completed(2, { responseText: '$\\boxed{12}$', truncated: true, finishReason: 'budget' }),
      completed(3, { responseText: 'I ran out of ideas' }),
    ]);
    expect(ok.data).toMatchObject({ reward: 1, correct: true, extracted: '12', normalizedGold: '12', rule: 'normalized_equal' });
    expect(ok.id).toBe('RewardAssigned:rollout:run1:0:0:0');
    expect(ok.meta.causationId).toBe('RolloutCompleted:rollout:run1:0:0:0');
    expect(wrong.data).toMatchObject({ reward: 0, correct: false, extracted: '1', rule: 'numeric' });
    expect(truncated.data).toMatchObject({ reward: 0, correct: false, rule: 'truncated' });
    expect(none.data).toMatchObject({ reward: 0, extracted: null, rule: 'no_answer' });
  });

  it('bounds a symbolic check that hangs: reward 0 with rule timeout, and later rollouts are still graded', async () => {
    const hang: SymbolicBackend = { check: () => new Promise(() => undefined) };
    const [slow, next] = await run(
      [completed(0, { responseText: '$\\boxed{2003^{2002^{2001}}}$', gold: '1' }), completed(1, { responseText: '$\\boxed{12}$' })],
      hang,
    );
    expect(slow.data).toMatchObject({ reward: 0, rule: 'timeout' });
    expect(next.data.reward).toBe(1);
  });
});
