import { createHash } from 'node:crypto';

/**
 * A Merkle tree over a batch of leaf hashes as RFC 9162 (Certificate Transparency v2, §2.1) defines it:
 * leaf hash = SHA-256(0x00 || data), interior node = SHA-256(0x01 || left || right), a tree of n > 1
 * leaves splits at the largest power of two below n. One signature over the root covers every leaf; a
 * leaf's inclusion path (its siblings, leaf to root) proves it is in the signed batch.
 */

const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

/** SHA-256(0x00 || data): the hash of one leaf. */
export function leafHash(data: string | Buffer): Buffer {
  return createHash('sha256').update(LEAF).update(data).digest();
}

function nodeHash(left: Buffer, right: Buffer): Buffer {
  return createHash('sha256').update(NODE).update(left).update(right).digest();
}

function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The root of the tree over `leaves` (leaf hashes), and each leaf's inclusion path (siblings, leaf to root). */
export function merkleTree(leaves: readonly Buffer[]): { root: Buffer; paths: Buffer[][] } {
  // A programmer invariant, not input: every caller builds the tree over a non-empty batch of events.
  if (leaves.length === 0) throw new Error('merkleTree: at least one leaf is needed');
  const paths: Buffer[][] = leaves.map(() => []);
  const build = (from: number, to: number): Buffer => {
    if (to - from === 1) return leaves[from];
    const k = split(to - from);
    const left = build(from, from + k);
    const right = build(from + k, to);
    // Siblings are appended bottom-up: deeper subtrees finish first.
    for (let i = from; i < from + k; i++) paths[i].push(right);
    for (let i = from + k; i < to; i++) paths[i].push(left);
    return nodeHash(left, right);
  };
  const root = build(0, leaves.length);
  return { root, paths };
}

/**
 * The root a leaf's inclusion path leads to (RFC 9162 §2.1.3.2), or null when the path does not fit a
 * tree of `size` leaves at `index`.
 */
export function rootFromPath(leaf: Buffer, index: number, size: number, path: readonly Buffer[]): Buffer | null {
  if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size) return null;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}
