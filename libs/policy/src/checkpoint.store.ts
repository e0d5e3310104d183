import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { ModelConfig } from '@rstar/contracts';
import { CheckpointError } from './errors';
import type { TokenizerSpec } from './tokenizer';

/** What a checkpoint directory holds (`model.json` + `weights.bin` [+ `optimizer.bin`]). */
export interface CheckpointData {
  config: ModelConfig;
  tokenizer: TokenizerSpec;
  /** Parameter names and shapes, in the order of `weights`. */
  params: { name: string; shape: number[] }[];
  weights: Float32Array[];
  optimizer: { step: number; m: Float32Array[]; v: Float32Array[] } | null;
  /** Free-form metadata (e.g. SFT steps, held-out scores). */
  meta: Record<string, unknown>;
}

const FORMAT = 'rstar-policy-v1';

function concat(arrs: Float32Array[]): Buffer {
  const total = arrs.reduce((a, x) => a + x.length, 0);
  const out = new Float32Array(total);
  let off = 0;
  for (const a of arrs) {
    out.set(a, off);
    off += a.length;
  }
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

function split(buf: Buffer, sizes: number[], what: string): Float32Array[] {
  const total = sizes.reduce((a, b) => a + b, 0);
  if (buf.byteLength !== total * 4) throw new CheckpointError(`${what} has ${buf.byteLength} bytes, expected ${total * 4} (the checkpoint is truncated or from another model)`);
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  const out: Float32Array[] = [];
  let off = 0;
  for (const n of sizes) {
    out.push(all.slice(off, off + n));
    off += n;
  }
  return out;
}

/** Content hash: sha256 over the model config, tokenizer, parameter layout and weight bytes (not the optimizer). */
function contentHash(config: ModelConfig, tokenizer: TokenizerSpec, params: CheckpointData['params'], weights: Buffer): string {
  const h = createHash('sha256');
  h.update(JSON.stringify({ config, tokenizer, params }));
  h.update(weights);
  return `sha256:${h.digest('hex')}`;
}

/**
 * Write a checkpoint atomically: everything goes to a temp sibling directory that is renamed over `dir`
 * (a reader sees the old or the new checkpoint, never a half-written one). Returns the content hash.
 */
export function writeCheckpoint(dir: string, data: CheckpointData): { dir: string; hash: string } {
  const target = resolve(dir);
  mkdirSync(dirname(target), { recursive: true });
  const tmp = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  mkdirSync(tmp);
  const weights = concat(data.weights);
  const hash = contentHash(data.config, data.tokenizer, data.params, weights);
  writeFileSync(join(tmp, 'weights.bin'), weights);
  if (data.optimizer) writeFileSync(join(tmp, 'optimizer.bin'), concat([...data.optimizer.m, ...data.optimizer.v]));
  writeFileSync(
    join(tmp, 'model.json'),
    JSON.stringify({
      format: FORMAT, hash, config: data.config, tokenizer: data.tokenizer, params: data.params,
      optimizer: data.optimizer ? { step: data.optimizer.step } : null, meta: data.meta,
    }, null, 1),
  );
  let old: string | null = null;
  if (existsSync(target)) {
    old = `${target}.old-${process.pid}-${randomBytes(4).toString('hex')}`;
    renameSync(target, old);
  }
  renameSync(tmp, target);
  if (old) rmSync(old, { recursive: true, force: true });
  return { dir: target, hash };
}

/** Read and verify a checkpoint. Throws {@link CheckpointError} when files are missing or the hash does not match. */
export function readCheckpoint(dir: string): CheckpointData & { hash: string } {
  const target = resolve(dir);
  const mf = join(target, 'model.json');
  if (!existsSync(mf)) throw new CheckpointError(`no checkpoint at ${target} (model.json missing; pass a directory written by model.save or rstar sft)`);
  const m = JSON.parse(readFileSync(mf, 'utf8'));
  if (m.format !== FORMAT) throw new CheckpointError(`${mf}: format ${m.format} is not ${FORMAT}`);
  const wbuf = readFileSync(join(target, 'weights.bin'));
  const hash = contentHash(m.config, m.tokenizer, m.params, wbuf);
  if (hash !== m.hash) throw new CheckpointError(`${target}: content hash ${hash} does not match the recorded ${m.hash} (the checkpoint is corrupt)`);
  const sizes = (m.params as { shape: number[] }[]).map((p) => p.shape.reduce((a, b) => a * b, 1));
  const weights = split(wbuf, sizes, 'weights.bin');
  let optimizer: CheckpointData['optimizer'] = null;
  if (m.optimizer && existsSync(join(target, 'optimizer.bin'))) {
    const parts = split(readFileSync(join(target, 'optimizer.bin')), [...sizes, ...sizes], 'optimizer.bin');
    optimizer = { step: m.optimizer.step, m: parts.slice(0, sizes.length), v: parts.slice(sizes.length) };
  }
  return { config: m.config, tokenizer: m.tokenizer, params: m.params, weights, optimizer, meta: m.meta ?? {}, hash };
}
