import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BATCH_V2_PROTOCOL, buildTrainingBatch, clippedLossStats, GrpoInputError, readBatchV2, writeBatchV2, type BatchGroup, type TrainingSequence } from './index';

// The same file is read by workers/trainer/tests/test_shared_vectors.py.
const fixture = JSON.parse(readFileSync(resolve(__dirname, '../fixtures/shared-vectors.json'), 'utf8')) as {
  clip: { epsLow: number; epsHigh: number; dualClip: number };
  header: { runId: string; step: number; policyVersion: number };
  groups: BatchGroup[];
  sequences: TrainingSequence[];
  logpNew: number[][];
  expected: { loss: number; clipFraction: number; dualClipFraction: number; approxKl: number; tokens: number; batchHash: string; v2Sha256: string; v2Bytes: number };
};

describe('shared loss vectors (libs/grpo <-> workers/trainer)', () => {
  it('given the fixture groups, then buildTrainingBatch gives the fixture sequences and hash', () => {
    const batch = buildTrainingBatch(fixture.groups);
    expect(batch.sequences).toEqual(fixture.sequences);
    expect(batch.hash).toBe(fixture.expected.batchHash);
  });

  it('given the fixture logprobs, then loss, clip fraction, dual-clip fraction and approx KL match to 1e-6', () => {
    const s = clippedLossStats(
      fixture.sequences.map((q, i) => ({ logpNew: fixture.logpNew[i], logpOld: q.oldLogprobs, mask: q.lossMask, advantage: q.advantage })),
      fixture.clip,
    );
    expect(Math.abs(s.loss - fixture.expected.loss)).toBeLessThan(1e-6);
    expect(Math.abs(s.clipFraction - fixture.expected.clipFraction)).toBeLessThan(1e-6);
    expect(Math.abs(s.dualClipFraction - fixture.expected.dualClipFraction)).toBeLessThan(1e-6);
    expect(Math.abs(s.approxKl - fixture.expected.approxKl)).toBeLessThan(1e-6);
    expect(s.tokens).toBe(fixture.expected.tokens);
    // The vectors exercise every branch: clipped, dual-clipped and unclipped tokens.
    expect(s.clipFraction).toBeGreaterThan(0);
    expect(s.dualClipFraction).toBeGreaterThan(0);
    expect(s.clipFraction).toBeLessThan(1);
  });
});

describe('writeBatchV2', () => {
  const batch = { sequences: fixture.sequences, hash: fixture.expected.batchHash };

  it('given the fixture batch, then the bytes hash to the value the Python writer also produces', () => {
    const f = writeBatchV2(batch, fixture.header);
    expect(f.bytes.length).toBe(fixture.expected.v2Bytes);
    expect(f.batchHash).toBe(fixture.expected.v2Sha256);
    expect(f.tokens).toBe(fixture.expected.tokens);
    expect(f.sequences).toBe(fixture.sequences.length);
    // Data starts 8-byte aligned after the length prefix and the space-padded header.
    const n = Number(f.bytes.readBigUInt64LE(0));
    expect((8 + n) % 8).toBe(0);
  });

  it('given a written file, then readBatchV2 returns the same tensors (logprobs and advantages as f32) and metadata', () => {
    const f = writeBatchV2(batch, fixture.header);
    const r = readBatchV2(f.bytes);
    expect(r.batchHash).toBe(f.batchHash);
    expect(r.metadata.protocol).toBe(BATCH_V2_PROTOCOL);
    expect(r.metadata.runId).toBe('shared-vectors');
    expect(r.metadata.step).toBe('3');
    expect(r.metadata.sourceBatchHash).toBe(fixture.expected.batchHash);
    expect(JSON.parse(r.metadata.rolloutIds)).toEqual(fixture.sequences.map((s) => s.rolloutId));
    const lens = fixture.sequences.map((s) => s.tokenIds.length);
    expect(r.seqOffsets).toEqual(lens.reduce((acc, n) => [...acc, acc[acc.length - 1] + n], [0]));
    expect(Array.from(r.tokenIds)).toEqual(fixture.sequences.flatMap((s) => s.tokenIds));
    expect(Array.from(r.lossMask)).toEqual(fixture.sequences.flatMap((s) => s.lossMask));
    expect(Array.from(r.oldLogprobs)).toEqual(fixture.sequences.flatMap((s) => s.oldLogprobs.map(Math.fround)));
    expect(Array.from(r.advantages)).toEqual(fixture.sequences.map((s) => Math.fround(s.advantage)));
  });

  it('given the same batch twice, then the bytes are identical (the hash is a content hash)', () => {
    expect(writeBatchV2(batch, fixture.header).batchHash).toBe(writeBatchV2(batch, fixture.header).batchHash);
    expect(writeBatchV2(batch, { ...fixture.header, step: 4 }).batchHash).not.toBe(fixture.expected.v2Sha256);
  });

  it('given bad values, then it throws GrpoInputError naming the field', () => {
    const bad = (patch: Partial<TrainingSequence>) => ({ sequences: [{ ...fixture.sequences[0], ...patch }], hash: 'x' });
    const n = fixture.sequences[0].tokenIds.length;
    expect(() => writeBatchV2(bad({ lossMask: new Array(n).fill(2) }), fixture.header)).toThrow(GrpoInputError);
    expect(() => writeBatchV2(bad({ lossMask: new Array(n).fill(2) }), fixture.header)).toThrow(/lossMask/);
    expect(() => writeBatchV2(bad({ tokenIds: new Array(n).fill(-1) }), fixture.header)).toThrow(/tokenIds/);
    expect(() => writeBatchV2(bad({ oldLogprobs: new Array(n).fill(NaN) }), fixture.header)).toThrow(/oldLogprobs/);
    expect(() => writeBatchV2(bad({ lossMask: [0] }), fixture.header)).toThrow(/same length/);
    expect(() => writeBatchV2(batch, { ...fixture.header, step: -1 })).toThrow(/header.step/);
  });

  it('given bytes that are not a v2 batch, then readBatchV2 throws', () => {
    expect(() => readBatchV2(Buffer.from('{}'))).toThrow(GrpoInputError);
    const f = writeBatchV2(batch, fixture.header);
    const broken = Buffer.from(f.bytes);
    broken.write('X', 9); // corrupt the header JSON
    expect(() => readBatchV2(broken)).toThrow(/not JSON/);
  });
});
