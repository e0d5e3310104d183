import { makeEvent, type EventDataInput, type EventType, type RstarEvent } from '@rstar/contracts';

/** Minimal valid data of every contract type, for tests that must publish each type once. */
const SAMPLE_DATA: { [T in EventType]: EventDataInput<T> } = {
  RunStarted: { config: {}, seed: 1, codeVersion: 'test', mode: 'distributed' },
  RunCompleted: { steps: 1, summary: {} },
  RunFailed: { error: 'test failure' },
  StepStarted: { step: 0, stage: 'rl', promptIds: ['p0'], policyVersion: 0 },
  RolloutRequested: {
    rolloutId: 'r0', groupId: 'g0', step: 0, promptIdx: 0, sampleIdx: 0, promptId: 'p0', problem: '1+1?', gold: '2',
    samplingParams: { temperature: 1, topP: 1, seed: 1 }, budget: { maxTokens: 16, maxTurns: 2 }, policyVersion: 0,
  },
  TurnGenerated: { rolloutId: 'r0', turn: 0, tokenIds: [1, 2], logprobs: [-0.5, -1], text: 'hi', finishReason: 'stop', engineId: 'e0' },
  ToolCallRequested: { callId: 'c0', rolloutId: 'r0', turn: 0, tool: 'python', code: 'print(1)', limits: { timeoutMs: 1000, memoryMb: 256 } },
  ToolCallCompleted: { callId: 'c0', rolloutId: 'r0', turn: 0, status: 'ok', stdout: '1\n', stderr: '', exitCode: 0, signal: null, wallMs: 1, cpuMs: 1, truncated: false },
  RolloutCompleted: {
    rolloutId: 'r0', groupId: 'g0', step: 0, promptId: 'p0', gold: '2', engineId: 'e0', policyVersion: 0, promptTokenIds: [1], responseTokenIds: [2],
    logprobs: [-1], lossMask: [1], responseText: '2', turns: 1, toolCalls: 0, toolErrors: 0, answerBlocks: 1, formatViolations: 0, truncated: false, finishReason: 'answer',
  },
  RewardAssigned: { rolloutId: 'r0', groupId: 'g0', step: 0, reward: 1, correct: true, extracted: '2', gold: '2', normalizedPrediction: '2', normalizedGold: '2', rule: 'exact', ms: 1 },
  GroupResampled: { groupId: 'g0', step: 0, promptId: 'p0', mode: 'none', seed: 's', kept: ['r0'], dropped: [], penalties: [], rewards: { r0: 1 }, groupDropped: null, received: 1, expected: 1 },
  StepOptimized: {
    step: 0, loss: 0.1, clipFraction: 0, approxKl: 0, entropy: null, gradNorm: 1, advantageMean: 0, advantageStd: 1, tokens: 1, rollouts: 1,
    batchHash: 'b', newPolicyVersion: 1, checkpointUri: '/ckpt/1', checkpointHash: 'h1',
  },
  PolicyUpdated: { version: 1, checkpointUri: '/ckpt/1', checkpointHash: 'h1' },
  RolloutDiscarded: { rolloutId: 'rollout:r:2:0:1', groupId: 'group:r:2:0', step: 2, reason: 'stale', policyVersion: 0, trainPolicyVersion: 2, staleness: 2, maxStaleness: 1 },
  StepCompleted: { step: 0, stage: 'rl', metrics: { reward: 1 } },
  EvaluationCompleted: { name: 'held-out', afterStep: 0, policyVersion: 0, passAt1: 0.5, prompts: 1, samples: 1 },
  DeadLettered: { subject: 'rstar.x', consumer: 'c', reason: 'test', field: null, payload: '{}' },
};

/** A valid event of `type` for run `runId` (id `<type>:<key>`), with minimal data; `data` overrides fields. */
export function sampleEvent<T extends EventType>(type: T, o: { runId: string; key?: string; producer?: string; data?: Partial<EventDataInput<T>> }): RstarEvent<T> {
  return makeEvent(type, {
    runId: o.runId,
    streamId: `run-${o.runId}`,
    key: o.key ?? o.runId,
    producer: o.producer ?? 'test',
    data: { ...SAMPLE_DATA[type], ...o.data } as EventDataInput<T>,
  });
}
