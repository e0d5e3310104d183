import { createHash } from 'node:crypto';
import { GrpoInputError } from './errors';
import type { TrainingBatch, TrainingSequence } from './training-batch.builder';

/** Protocol name in the v2 file's `__metadata__.protocol`. */
export const BATCH_V2_PROTOCOL = 'rstar.grpo-batch/2';

/** Which step a v2 file belongs to (also checked by the worker against its PUT request). */
export interface BatchV2Header {
  runId: string;
  step: number;
  policyVersion: number;
}

/** A written v2 batch: the file bytes and `batchHash` = sha256 hex of exactly those bytes. */
export interface BatchV2File {
  bytes: Buffer;
  batchHash: string;
  sequences: number;
  /** Model tokens (loss-mask ones). */
  tokens: number;
}

/** The tensors of a v2 file, in data order, with their safetensors dtype and bytes per element. */
const TENSORS = [
  ['seq_offsets', 'I64', 8],
  ['advantages', 'F32', 4],
  ['old_logprobs', 'F32', 4],
  ['token_ids', 'I32', 4],
  ['loss_mask', 'U8', 1],
] as const;

type TensorName = (typeof TENSORS)[number][0];

/** What {@link readBatchV2} gives back. */
export interface BatchV2Content {
  metadata: Record<string, string>;
  seqOffsets: number[];
  advantages: Float32Array;
  oldLogprobs: Float32Array;
  tokenIds: Int32Array;
  lossMask: Uint8Array;
  batchHash: string;
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/**
 * Serialise a step's training batch as batch format v2: one safetensors file (layout in
 * workers/trainer/README.md; the Python writer in workers/trainer produces identical bytes):
 * 8-byte little-endian header length, compact JSON header (`__metadata__` with sorted string keys, then
 * the tensors in data order) padded with spaces to a multiple of 8, then the data — `seq_offsets` I64
 * [N+1], `advantages` F32 [N], `old_logprobs` F32 [T], `token_ids` I32 [T], `loss_mask` U8 [T].
 * Metadata: protocol, runId, step, policyVersion, sequences, tokens, and JSON arrays rolloutIds, groupIds,
 * rewards, promptLengths; `sourceBatchHash` = `batch.hash`. Logprobs and advantages are rounded to f32.
 * Throws {@link GrpoInputError} for a token id outside [0, 2^31), a mask value other than 0/1, a
 * non-finite logprob or advantage, or a bad header.
 */
export function writeBatchV2(batch: Pick<TrainingBatch, 'sequences' | 'hash'>, header: BatchV2Header): BatchV2File {
  if (typeof header.runId !== 'string' || header.runId === '') throw new GrpoInputError('header.runId must be a non-empty string', 'header.runId');
  for (const k of ['step', 'policyVersion'] as const) {
    if (!Number.isInteger(header[k]) || header[k] < 0) throw new GrpoInputError(`header.${k} must be a non-negative integer, got ${String(header[k])}`, `header.${k}`);
  }
  const seqs = batch.sequences;
  const total = seqs.reduce((a, s) => a + s.tokenIds.length, 0);
  const seqOffsets = new BigInt64Array(seqs.length + 1);
  const advantages = new Float32Array(seqs.length);
  const oldLogprobs = new Float32Array(total);
  const tokenIds = new Int32Array(total);
  const lossMask = new Uint8Array(total);
  let off = 0;
  let tokens = 0;
  seqs.forEach((s: TrainingSequence, i) => {
    const n = s.tokenIds.length;
    if (s.lossMask.length !== n || s.oldLogprobs.length !== n) {
      throw new GrpoInputError(`sequences[${i}]: tokenIds (${n}), lossMask (${s.lossMask.length}) and oldLogprobs (${s.oldLogprobs.length}) must have the same length`, `sequences.${i}.lossMask`);
    }
    if (!Number.isFinite(s.advantage)) throw new GrpoInputError(`sequences[${i}].advantage must be finite`, `sequences.${i}.advantage`);
    advantages[i] = s.advantage;
    for (let t = 0; t < n; t++) {
      const id = s.tokenIds[t];
      if (!Number.isInteger(id) || id < 0 || id > 0x7fffffff) throw new GrpoInputError(`sequences[${i}].tokenIds[${t}] = ${id} is not a token id in [0, 2^31)`, `sequences.${i}.tokenIds`);
      const m = s.lossMask[t];
      if (m !== 0 && m !== 1) throw new GrpoInputError(`sequences[${i}].lossMask[${t}] must be 0 or 1, got ${m}`, `sequences.${i}.lossMask`);
      const lp = s.oldLogprobs[t];
      if (!Number.isFinite(lp)) throw new GrpoInputError(`sequences[${i}].oldLogprobs[${t}] must be finite`, `sequences.${i}.oldLogprobs`);
      tokenIds[off + t] = id;
      lossMask[off + t] = m;
      oldLogprobs[off + t] = lp;
      tokens += m;
    }
    off += n;
    seqOffsets[i + 1] = BigInt(off);
  });
  const metadata: Record<string, string> = {
    groupIds: JSON.stringify(seqs.map((s) => s.groupId)),
    policyVersion: String(header.policyVersion),
    promptLengths: JSON.stringify(seqs.map((s) => s.promptLength)),
    protocol: BATCH_V2_PROTOCOL,
    rewards: JSON.stringify(seqs.map((s) => s.reward)),
    rolloutIds: JSON.stringify(seqs.map((s) => s.rolloutId)),
    runId: header.runId,
    sequences: String(seqs.length),
    sourceBatchHash: batch.hash,
    step: String(header.step),
    tokens: String(tokens),
  };
  const bytes = encodeSafetensors(metadata, { seq_offsets: seqOffsets, advantages, old_logprobs: oldLogprobs, token_ids: tokenIds, loss_mask: lossMask });
  return { bytes, batchHash: sha256(bytes), sequences: seqs.length, tokens };
}

type TypedArray = BigInt64Array | Float32Array | Int32Array | Uint8Array;

/** The deterministic safetensors encoding shared with the Python writer (see {@link writeBatchV2}). */
function encodeSafetensors(metadata: Record<string, string>, data: Record<TensorName, TypedArray>): Buffer {
  const header: Record<string, unknown> = { __metadata__: Object.fromEntries(Object.keys(metadata).sort().map((k) => [k, metadata[k]])) };
  let off = 0;
  for (const [name, dtype, size] of TENSORS) {
    const n = data[name].length;
    header[name] = { dtype, shape: [n], data_offsets: [off, off + n * size] };
    off += n * size;
  }
  let json = Buffer.from(JSON.stringify(header), 'utf8');
  const pad = (8 - ((8 + json.length) % 8)) % 8;
  if (pad) json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const out = Buffer.alloc(8 + json.length + off);
  out.writeBigUInt64LE(BigInt(json.length), 0);
  json.copy(out, 8);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  let p = 8 + json.length;
  for (const [name, dtype] of TENSORS) {
    const arr = data[name];
    // Explicit little-endian writes: the file is the same on any host byte order.
    for (let i = 0; i < arr.length; i++) {
      switch (dtype) {
        case 'I64':
          view.setBigInt64(p, (arr as BigInt64Array)[i], true);
          p += 8;
          break;
        case 'F32':
          view.setFloat32(p, (arr as Float32Array)[i], true);
          p += 4;
          break;
        case 'I32':
          view.setInt32(p, (arr as Int32Array)[i], true);
          p += 4;
          break;
        default:
          view.setUint8(p, (arr as Uint8Array)[i]);
          p += 1;
      }
    }
  }
  return out;
}

/**
 * Parse a v2 batch file (for tests and tools; the trainer worker has its own reader). Checks the
 * protocol, the five tensors' dtypes and that their offsets tile the data. Throws {@link GrpoInputError}.
 */
export function readBatchV2(bytes: Uint8Array): BatchV2Content {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 8) throw new GrpoInputError('a v2 batch starts with an 8-byte header length', 'bytes');
  const n = Number(buf.readBigUInt64LE(0));
  if (8 + n > buf.length) throw new GrpoInputError(`header length ${n} is past the end of the file`, 'bytes');
  let header: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }> & { __metadata__?: Record<string, string> };
  try {
    header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  } catch (e) {
    throw new GrpoInputError(`the safetensors header is not JSON (${(e as Error).message})`, 'bytes');
  }
  const metadata = header.__metadata__ ?? {};
  if (metadata.protocol !== BATCH_V2_PROTOCOL) throw new GrpoInputError(`__metadata__.protocol is ${String(metadata.protocol)}, expected ${BATCH_V2_PROTOCOL}`, 'protocol');
  const base = 8 + n;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const read = (name: TensorName, dtype: string, size: number) => {
    const h = header[name];
    if (!h || h.dtype !== dtype || h.shape.length !== 1) throw new GrpoInputError(`tensor ${name} must be a 1-D ${dtype}`, name);
    const [a, b] = h.data_offsets;
    if (b - a !== h.shape[0] * size || base + b > buf.length) throw new GrpoInputError(`tensor ${name}: data_offsets do not match its shape`, name);
    return { start: base + a, count: h.shape[0] };
  };
  const so = read('seq_offsets', 'I64', 8);
  const seqOffsets = Array.from({ length: so.count }, (_, i) => Number(view.getBigInt64(so.start + 8 * i, true)));
  const f32 = (name: TensorName) => {
    const r = read(name, 'F32', 4);
    return Float32Array.from({ length: r.count }, (_, i) => view.getFloat32(r.start + 4 * i, true));
  };
  const ti = read('token_ids', 'I32', 4);
  const lm = read('loss_mask', 'U8', 1);
  return {
    metadata,
    seqOffsets,
    advantages: f32('advantages'),
    oldLogprobs: f32('old_logprobs'),
    tokenIds: Int32Array.from({ length: ti.count }, (_, i) => view.getInt32(ti.start + 4 * i, true)),
    lossMask: Uint8Array.from(buf.subarray(lm.start, lm.start + lm.count)),
    batchHash: sha256(bytes),
  };
}
