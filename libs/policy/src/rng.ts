/**
 * Seeded pseudo-random numbers (mulberry32). All randomness of the built-in policy (initialisation,
 * sampling, task generation) comes from here so that a seed fixes every result, independent of tfjs.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    // Mix the seed once so that nearby seeds give unrelated streams.
    this.state = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ 0xc2b2ae35) >>> 0;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** Standard normal sample (Box-Muller). */
  normal(): number {
    const u = Math.max(this.next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** Pick one element uniformly. */
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)];
  }
}

/** Derive a child seed from a seed and integer salts (stable 32-bit hash). */
export function deriveSeed(seed: number, ...salts: number[]): number {
  let h = (seed | 0) ^ 0x811c9dc5;
  for (const s of salts) {
    h = Math.imul(h ^ (s | 0), 0x01000193);
    h ^= h >>> 13;
  }
  return h >>> 0;
}
