import { GrpoInputError } from './errors';
/**
 * The seeded PRNG of every GRPO-RoC decision (docs/design/protocol.md §5: "all randomness from a PRNG seeded by
 * hash(runSeed, step, groupId)"). Two published, well-defined algorithms by bryc (public domain):
 * `cyrb128` hashes a string to 128 bits, `sfc32` (Chris Doty-Humphrey's Small Fast Counter) turns those
 * 128 bits into a stream of uniform floats. Pure 32-bit integer math, so a replay on any JS engine gives
 * bit-identical picks.
 */

/** A source of uniform floats in [0, 1). */
export type Rng = () => number;

/** cyrb128: a 128-bit string hash, as four unsigned 32-bit words. */
export function cyrb128(str: string): [number, number, number, number] {
  let h1 = 1779033703,
    h2 = 3144134277,
    h3 = 1013904242,
    h4 = 2773480762;
  for (let i = 0; i < str.length; i++) {
    const k = str.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

/** sfc32 over a 128-bit state; returns floats in [0, 1) with 32 bits of resolution. */
export function sfc32(a: number, b: number, c: number, d: number): Rng {
  return () => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

/**
 * The recorded seed of one decision: the 128-bit cyrb128 hash of `JSON.stringify(parts)` as 32 hex
 * digits. JSON keeps the parts unambiguous (`[1, "2:3"]` and `[1, 2, 3]` hash differently).
 * Example: `seedOf(runSeed, step, groupId)` for a group's RoC pick.
 */
export function seedOf(...parts: ReadonlyArray<string | number>): string {
  return cyrb128(JSON.stringify(parts))
    .map((w) => w.toString(16).padStart(8, '0'))
    .join('');
}

/** An sfc32 stream from a seed made by {@link seedOf}; the same seed always gives the same stream. */
export function rngFromSeed(seed: string): Rng {
  if (!/^[0-9a-f]{32}$/.test(seed)) throw new GrpoInputError(`seed must be 32 lowercase hex digits (from seedOf), got "${seed}"`, 'seed');
  const w = [0, 8, 16, 24].map((i) => parseInt(seed.slice(i, i + 8), 16));
  const rng = sfc32(w[0], w[1], w[2], w[3]);
  // The first outputs of sfc32 are weakly mixed; discarding a few is the author's recommendation.
  for (let i = 0; i < 12; i++) rng();
  return rng;
}

/** A uniform integer in [0, n) from `rng`. */
export function randomInt(rng: Rng, n: number): number {
  return Math.floor(rng() * n);
}

/** `k` distinct items drawn uniformly without replacement (partial Fisher-Yates), in draw order. */
export function sampleUniform<T>(rng: Rng, items: readonly T[], k: number): T[] {
  const pool = items.slice();
  const n = Math.min(k, pool.length);
  for (let i = 0; i < n; i++) {
    const j = i + randomInt(rng, pool.length - i);
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n);
}

/**
 * `k` distinct items drawn without replacement, each draw with probability proportional to its weight
 * among the items still left (successive sampling, as `torch.multinomial(w, k, replacement=False)`).
 * Weights must be positive and finite.
 */
export function sampleWeighted<T>(rng: Rng, items: readonly T[], weights: readonly number[], k: number): T[] {
  const pool = items.map((item, i) => ({ item, w: weights[i] }));
  const out: T[] = [];
  const n = Math.min(k, pool.length);
  for (let draw = 0; draw < n; draw++) {
    const total = pool.reduce((s, p) => s + p.w, 0);
    let u = rng() * total;
    let idx = pool.length - 1;
    for (let i = 0; i < pool.length; i++) {
      u -= pool[i].w;
      if (u < 0) {
        idx = i;
        break;
      }
    }
    out.push(pool[idx].item);
    pool.splice(idx, 1);
  }
  return out;
}
