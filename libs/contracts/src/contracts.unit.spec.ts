import { describe, expect, it } from 'vitest';
import {
  makeEvent, parseEvent, exportJsonSchemas, ids, streams, InvalidEventError, UnknownEventError,
  parseRunConfig, parseRunConfigYaml, ConfigError, subjectOf, typeOfSubject, EVENT_TYPES,
} from './index';

const reward = {
  rolloutId: 'rollout:r1:0:0:0', groupId: 'group:r1:0:0', step: 0, reward: 1 as const, correct: true,
  extracted: '5', gold: '5', normalizedPrediction: '5', normalizedGold: '5', rule: 'exact', ms: 0.2,
};

describe('events', () => {
  it('given the same key, makeEvent yields the same deterministic id', () => {
    const a = makeEvent('RewardAssigned', { runId: 'r1', streamId: streams.rollout(reward.rolloutId), key: reward.rolloutId, data: reward, producer: 't' });
    const b = makeEvent('RewardAssigned', { runId: 'r1', streamId: streams.rollout(reward.rolloutId), key: reward.rolloutId, data: reward, producer: 't' });
    expect(a.id).toBe(b.id);
    expect(a.id).toBe('RewardAssigned:rollout:r1:0:0:0');
    expect(a.meta.correlationId).toBe('r1');
  });

  it('inherits correlation and trace context from the causing event', () => {
    const cause = makeEvent('RewardAssigned', { runId: 'r1', streamId: 's', key: 'k', data: reward, producer: 't', traceparent: '00-abc-def-01' });
    const e = makeEvent('RunFailed', { runId: 'r1', streamId: 's', key: 'x', data: { error: 'boom' }, producer: 't', causedBy: cause });
    expect(e.meta.causationId).toBe(cause.id);
    expect(e.meta.traceparent).toBe('00-abc-def-01');
  });

  it('round-trips through JSON', () => {
    const e = makeEvent('RewardAssigned', { runId: 'r1', streamId: 's', key: 'k', data: reward, producer: 't' });
    expect(parseEvent(JSON.stringify(e))).toEqual(e);
  });

  it('upcasts RewardAssigned v1 to v2 on read', () => {
    const e = makeEvent('RewardAssigned', { runId: 'r1', streamId: 's', key: 'k', data: reward, producer: 't' });
    const { normalizedPrediction: _a, normalizedGold: _b, ms: _c, ...v1data } = e.data;
    const parsed = parseEvent({ ...e, version: 1, data: v1data });
    expect(parsed.version).toBe(2);
    expect(parsed.data).toMatchObject({ normalizedPrediction: null, normalizedGold: null, ms: null, reward: 1 });
  });

  it('names the offending field of a malformed event', () => {
    const e = makeEvent('RewardAssigned', { runId: 'r1', streamId: 's', key: 'k', data: reward, producer: 't' });
    const bad = { ...e, data: { ...e.data, reward: 'yes' } };
    expect(() => parseEvent(bad)).toThrowError(InvalidEventError);
    expect(() => parseEvent(bad)).toThrowError(/RewardAssigned\.data\.reward/);
    expect(() => parseEvent('{not json')).toThrowError(/not JSON/);
    expect(() => parseEvent({ ...e, runId: undefined })).toThrowError(/"runId"/);
  });

  it('rejects unknown types and future versions', () => {
    const e = makeEvent('RewardAssigned', { runId: 'r1', streamId: 's', key: 'k', data: reward, producer: 't' });
    expect(() => parseEvent({ ...e, type: 'Nope' })).toThrowError(UnknownEventError);
    expect(() => parseEvent({ ...e, version: 9 })).toThrowError(/newer than this code knows/);
  });

  it('maps subjects both ways for every type', () => {
    for (const t of EVENT_TYPES) expect(typeOfSubject(subjectOf(t))).toBe(t);
    expect(ids.rollout('r', 1, 2, 3)).toBe('rollout:r:1:2:3');
  });

  it('JSON Schema export matches the committed snapshot (a contract change must be reviewed)', async () => {
    await expect(JSON.stringify(exportJsonSchemas(), null, 2) + '\n').toMatchFileSnapshot('../schemas/contracts.schema.json');
  });
});

describe('run config', () => {
  const minimal = { stages: [{ name: 'rl', steps: 2, promptsPerStep: 2, maxResponseTokens: 64, lr: 1e-3 }] };
  it('fills PROTOCOL defaults', () => {
    const c = parseRunConfig(minimal);
    expect(c.tool.timeoutMs).toBe(4000);
    expect(c.tool.memoryMb).toBe(384);
    expect(c.trainer.epsHigh).toBe(0.28);
    expect(c.stages[0].groupSize).toBe(16);
    expect(c.roc.mode).toBe('weighted');
  });
  it('names the field and the fix on bad input', () => {
    expect(() => parseRunConfig({ stages: [{ ...minimal.stages[0], lr: 'fast' }] })).toThrowError(ConfigError);
    expect(() => parseRunConfig({ stages: [{ ...minimal.stages[0], lr: 'fast' }] })).toThrowError(/stages\.0\.lr/);
    expect(() => parseRunConfig({ stages: [] })).toThrowError(/stages/);
    expect(() => parseRunConfigYaml('stages: [')).toThrowError(/not valid YAML/);
    expect(() => parseRunConfig({ ...minimal, data: { source: 'file' } })).toThrowError(/data\.path/);
  });
});

describe('run config strictness', () => {
  it('rejects unknown or misspelled keys at any depth, naming them', () => {
    const stage = { name: 'rl', steps: 2, promptsPerStep: 2, maxResponseTokens: 64, lr: 1e-3 };
    expect(() => parseRunConfig({ stages: [stage], learning_rat: 0.1 })).toThrowError(/learning_rat/);
    expect(() => parseRunConfig({ stages: [{ ...stage, stepz: 400 }] })).toThrowError(/stages\.0.*stepz/);
    expect(() => parseRunConfig({ stages: [stage], sft: { stpes: 3 } })).toThrowError(/stpes/);
  });
});

describe('run config of a Hugging Face policy', () => {
  const stage = { name: 'rl', steps: 2, promptsPerStep: 2, maxResponseTokens: 64, lr: 1e-6 };
  const engines = [{ kind: 'sglang', url: 'http://127.0.0.1:30000' }];
  it('reads the older `external` kinds as `hf` / `worker`', () => {
    const c = parseRunConfig({ stages: [stage], validateOnly: true, policy: { kind: 'external' }, trainer: { kind: 'external' }, engines });
    expect(c.policy.kind).toBe('hf');
    expect(c.trainer.kind).toBe('worker');
  });
  it('takes the worker settings and leaves them absent when not given', () => {
    const c = parseRunConfig({ stages: [stage], policy: { kind: 'hf', path: '/m', prompt: 'compact' }, trainer: { kind: 'worker', miniBatch: 8, tisCap: 2, ppoEpochs: 1 }, engines });
    expect(c.trainer).toMatchObject({ miniBatch: 8, tisCap: 2, ppoEpochs: 1 });
    expect(parseRunConfig({ stages: [stage] }).trainer).not.toHaveProperty('miniBatch');
  });
  it('refuses a Hugging Face policy on the builtin trainer or engine, naming the field', () => {
    expect(() => parseRunConfig({ stages: [stage], policy: { kind: 'hf', path: '/m' }, engines })).toThrowError(/trainer\.kind/);
    expect(() => parseRunConfig({ stages: [stage], policy: { kind: 'hf', path: '/m' }, trainer: { kind: 'worker' } })).toThrowError(/engines/);
    expect(() => parseRunConfig({ stages: [stage], trainer: { kind: 'worker', tisCap: 0.5 } })).toThrowError(/trainer\.tisCap/);
  });
});

describe('optional fields added without a version bump', () => {
  it('parses a TurnGenerated recorded before policyVersion existed, and one with it', () => {
    const data = { rolloutId: 'rollout:r1:0:0:0', turn: 0, tokenIds: [1, 2], logprobs: [-0.1, -0.2], text: 'ab', finishReason: 'stop' as const, engineId: 'e0' };
    const old = makeEvent('TurnGenerated', { runId: 'r1', streamId: 's', key: 'k', data, producer: 't' });
    expect(parseEvent(JSON.stringify(old)).data).not.toHaveProperty('policyVersion');
    const now = makeEvent('TurnGenerated', { runId: 'r1', streamId: 's', key: 'k', data: { ...data, policyVersion: 3, weightVersion: '3' }, producer: 't' });
    expect(parseEvent(JSON.stringify(now)).data).toMatchObject({ policyVersion: 3, weightVersion: '3' });
  });
});
