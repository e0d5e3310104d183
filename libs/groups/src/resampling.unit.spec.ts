import { afterEach, describe, expect, it } from 'vitest';
import { ids, makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { InProcessBus } from '@rstar/messaging';
import { resampleGroup } from '@rstar/grpo';
import { GroupCollector, ResamplingHandler, type GroupPolicy } from './index';

const RUN = 'run-rs';
const policy: GroupPolicy = { expected: 8, keep: 4, mode: 'weighted', runSeed: 3, timeoutS: 60 };

/** The three input events of rollout `s` of group (step 0, prompt 0) with reward `reward`. */
function rolloutEvents(s: number, reward: 0 | 1, toolErrors = 0, withPolicy = true): RstarEvent[] {
  const rolloutId = ids.rollout(RUN, 0, 0, s);
  const groupId = ids.group(RUN, 0, 0);
  const common = { runId: RUN, streamId: streams.rollout(rolloutId), key: rolloutId, producer: 'test' };
  return [
    makeEvent('RolloutRequested', {
      ...common,
      data: {
        rolloutId, groupId, step: 0, promptIdx: 0, sampleIdx: s, promptId: 'p0', problem: '1+1', gold: '2',
        samplingParams: { temperature: 1, topP: 1, seed: s }, budget: { maxTokens: 64, maxTurns: 4 }, policyVersion: 0,
        ...(withPolicy ? { resample: policy } : {}),
      },
    }),
    makeEvent('RolloutCompleted', {
      ...common,
      data: {
        rolloutId, groupId, step: 0, promptId: 'p0', gold: '2', engineId: 'e0', policyVersion: 0,
        promptTokenIds: [1], responseTokenIds: [2], logprobs: [-1], lossMask: [1], responseText: 'x',
        turns: 2, toolCalls: 2, toolErrors, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer',
      },
    }),
    makeEvent('RewardAssigned', {
      ...common,
      data: {
        rolloutId, groupId, step: 0, reward, correct: reward === 1, extracted: '2', gold: '2',
        normalizedPrediction: '2', normalizedGold: '2', rule: 'exact', ms: 0,
      },
    }),
  ];
}
const rewards: Array<0 | 1> = [1, 0, 1, 0, 1, 1, 0, 0];
const allEvents = () => rewards.flatMap((r, s) => rolloutEvents(s, r, s === 0 ? 2 : 0));

function feed(c: GroupCollector, events: RstarEvent[], now = 0): void {
  for (const e of events) {
    if (e.type === 'RolloutRequested') c.onRequested(e.runId, e.data, now);
    if (e.type === 'RolloutCompleted') c.onCompleted(e.runId, e.data, now);
    if (e.type === 'RewardAssigned') c.onReward(e.runId, e.data, now);
  }
}

describe('GroupCollector', () => {
  it('given 7 of 8 rollouts, then nothing is decided; given the 8th, then the group is resampled to G', () => {
    const c = new GroupCollector();
    const events = allEvents();
    feed(c, events.slice(0, 21));
    expect(c.decisions()).toEqual([]);
    feed(c, events.slice(21));
    const [d] = c.decisions();
    expect(d.data.kept).toHaveLength(4);
    expect(d.data.received).toBe(8);
    expect(d.data.groupDropped).toBeNull();
    expect(d.data.penalties.find((p) => p.rolloutId.endsWith(':0'))?.pErr).toBe(1);
  });

  it('given events shuffled and duplicated, then the decision equals resampleGroup over sample order', () => {
    const events = allEvents();
    const shuffled = [...events].reverse().concat(events.slice(0, 5));
    const c = new GroupCollector();
    feed(c, shuffled);
    const [d] = c.decisions();
    const expected = resampleGroup({
      groupId: ids.group(RUN, 0, 0), G: 4, mode: 'weighted', runSeed: 3, step: 0,
      rollouts: rewards.map((reward, s) => ({
        rolloutId: ids.rollout(RUN, 0, 0, s), reward, toolCalls: 2, toolErrors: s === 0 ? 2 : 0, answerBlocks: 1, turns: 2,
      })),
    });
    expect(d.data.kept).toEqual(expected.kept);
    expect(d.data.seed).toBe(expected.seed);
  });

  it('given a published group, then later events of it are ignored', () => {
    const c = new GroupCollector();
    feed(c, allEvents());
    c.markPublished(c.decisions()[0].data.groupId);
    feed(c, allEvents());
    expect(c.decisions()).toEqual([]);
    expect(c.open).toBe(0);
  });

  it('given a stalled group past its timeout, then it is dropped as timeout with what was received', () => {
    const c = new GroupCollector();
    feed(c, allEvents().slice(0, 9), 1_000);
    expect(c.decisions(1_000 + 59_999)).toEqual([]);
    const [d] = c.decisions(1_000 + 60_000);
    expect(d.data.groupDropped).toBe('timeout');
    expect(d.data.kept).toEqual([]);
    expect(d.data.received).toBe(3);
    expect(d.data.expected).toBe(8);
    // The event says why: what the group still waited for, against which budget.
    expect(d.data.timeout).toMatchObject({ budgetS: 60, waitedS: 60, unseen: 5, missing: [] });
    expect(d.data.timeout!.reason).toBe('no rewards for 5 of 8 rollouts after 60 s (budget 60 s): 5 never requested');
  });

  it('given requested rollouts without completion or reward at the timeout, then each is named with what it waits for', () => {
    const c = new GroupCollector();
    const events = allEvents();
    // Rollout 1: requested only; rollout 2: requested and completed, no reward; the rest complete.
    const id = (e: RstarEvent) => (e.data as { rolloutId: string }).rolloutId;
    feed(c, events.filter((e) => !((e.type !== 'RolloutRequested' && id(e).endsWith(':1')) || (e.type === 'RewardAssigned' && id(e).endsWith(':2')))), 0);
    const [d] = c.decisions(61_000);
    expect(d.data.received).toBe(6);
    expect(d.data.timeout!.missing).toEqual([
      { rolloutId: ids.rollout(RUN, 0, 0, 1), waitingFor: 'completion' },
      { rolloutId: ids.rollout(RUN, 0, 0, 2), waitingFor: 'reward' },
    ]);
    expect(d.data.timeout!.reason).toBe('no rewards for 2 of 8 rollouts after 61 s (budget 60 s): 1 without RolloutCompleted [1], 1 without RewardAssigned [2]');
  });

  it('given no resample field, then the defaults decide; with no defaults, then it waits', () => {
    const noPolicy = rewards.flatMap((r, s) => rolloutEvents(s, r, 0, false));
    const waiting = new GroupCollector();
    feed(waiting, noPolicy);
    expect(waiting.decisions(1e12)).toEqual([]);
    const withDefaults = new GroupCollector({ ...policy, mode: 'topk' });
    feed(withDefaults, noPolicy);
    expect(withDefaults.decisions()[0].data.mode).toBe('topk');
  });
});

describe('ResamplingHandler on the in-process bus', () => {
  let bus: InProcessBus;
  afterEach(async () => bus?.close());

  async function collect(b: InProcessBus): Promise<RstarEvent<'GroupResampled'>[]> {
    const got: RstarEvent<'GroupResampled'>[] = [];
    await b.subscribe({ durable: 'probe', types: ['GroupResampled'], handler: async (e) => void got.push(e) });
    return got;
  }
  const until = async (cond: () => boolean) => {
    while (!cond()) await new Promise((r) => setImmediate(r));
  };

  it('given a full group published (with a redelivered duplicate), then exactly one GroupResampled is emitted', async () => {
    bus = new InProcessBus({ subjectPrefix: 'rs1' });
    const got = await collect(bus);
    const h = new ResamplingHandler(bus, { sweepMs: 60_000 });
    await h.start();
    const events = allEvents();
    await bus.publish(events);
    await until(() => got.length === 1);
    await bus.publish(events.slice(0, 3)); // duplicates: dropped by id
    await h.stop();
    expect(got).toHaveLength(1);
    expect(got[0].id).toBe(`GroupResampled:${ids.group(RUN, 0, 0)}`);
    expect(got[0].data.kept).toHaveLength(4);
  });

  it('given a restart with half the group only in the archive, then the rebuilt handler still decides it', async () => {
    bus = new InProcessBus({ subjectPrefix: 'rs2' });
    const got = await collect(bus);
    const events = allEvents();
    const archived = events.slice(0, 12);
    const h = new ResamplingHandler(bus, { store: { readEvents: async () => archived }, sweepMs: 60_000 });
    await h.start();
    await bus.publish(events.slice(12));
    await until(() => got.length === 1);
    await h.stop();
    expect(got[0].data.received).toBe(8);
  });

  it('given a group that never completes, then the sweep records a timeout', async () => {
    bus = new InProcessBus({ subjectPrefix: 'rs3' });
    const got = await collect(bus);
    let now = 0;
    const h = new ResamplingHandler(bus, { sweepMs: 60_000, now: () => now });
    await h.start();
    await bus.publish(allEvents().slice(0, 6));
    await until(() => h.collector.open === 1);
    now = 61_000;
    await h.sweep();
    await until(() => got.length === 1);
    await h.stop();
    expect(got[0].data.groupDropped).toBe('timeout');
  });
});
