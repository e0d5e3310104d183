import { PolicyInputError } from '../errors';
import { Rng, deriveSeed } from '../rng';

/** Kinds of the built-in task family: each is hard to do "in the head" for a tiny model but one line of Python. */
export const TASK_KINDS = ['mul', 'modpow', 'rangesum', 'gcd', 'lcm', 'count'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

/** One problem: question text, gold answer (an integer as a string), and the reference program. */
export interface Task {
  id: string;
  kind: TaskKind;
  problem: string;
  answer: string;
  /** A Python program that prints the answer (used for SFT traces; executed for real to get the tool output). */
  code: string;
}

const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));
function modpow(b: bigint, e: bigint, m: bigint): bigint {
  let r = 1n;
  b %= m;
  while (e > 0n) {
    if (e & 1n) r = (r * b) % m;
    b = (b * b) % m;
    e >>= 1n;
  }
  return r;
}

function makeTask(kind: TaskKind, rng: Rng): Omit<Task, 'id'> {
  switch (kind) {
    case 'mul': {
      const a = rng.int(100, 999);
      const b = rng.int(100, 999);
      return { kind, problem: `What is ${a} * ${b}?`, code: `print(${a} * ${b})`, answer: String(a * b) };
    }
    case 'modpow': {
      const a = rng.int(2, 99);
      const e = rng.int(100, 999);
      const m = rng.int(100, 999);
      return { kind, problem: `What is ${a}**${e} modulo ${m}?`, code: `print(pow(${a}, ${e}, ${m}))`, answer: String(modpow(BigInt(a), BigInt(e), BigInt(m))) };
    }
    case 'rangesum': {
      const a = rng.int(1, 99);
      const b = rng.int(100, 999);
      return { kind, problem: `What is the sum of the integers from ${a} to ${b}?`, code: `print(sum(range(${a}, ${b} + 1)))`, answer: String(((a + b) * (b - a + 1)) / 2) };
    }
    case 'gcd': {
      const g = rng.int(2, 60);
      const a = g * rng.int(10, 99);
      const b = g * rng.int(10, 99);
      return { kind, problem: `What is the gcd of ${a} and ${b}?`, code: `import math; print(math.gcd(${a}, ${b}))`, answer: String(gcd(BigInt(a), BigInt(b))) };
    }
    case 'lcm': {
      const a = rng.int(10, 999);
      const b = rng.int(10, 999);
      return { kind, problem: `What is the lcm of ${a} and ${b}?`, code: `import math; print(math.lcm(${a}, ${b}))`, answer: String((BigInt(a) * BigInt(b)) / gcd(BigInt(a), BigInt(b))) };
    }
    case 'count': {
      const n = rng.int(100, 9999);
      const k = rng.int(3, 19);
      return { kind, problem: `How many integers from 1 to ${n} are divisible by ${k}?`, code: `print(len(range(${k}, ${n} + 1, ${k})))`, answer: String(Math.floor(n / k)) };
    }
  }
}

/**
 * Seeded generator of the task family: `n` problems cycling through `kinds` (default all), each
 * with its gold integer answer. The same `{seed, n, kinds}` gives the same list; ids are `<kind>-<seed>-<i>`.
 * Use disjoint seeds for training and held-out sets.
 */
export function generateTasks(opts: { seed: number; n: number; kinds?: readonly TaskKind[] }): Task[] {
  const kinds = opts.kinds ?? TASK_KINDS;
  if (!Number.isInteger(opts.n) || opts.n < 0) throw new PolicyInputError(`n must be a non-negative integer, got ${opts.n}`, 'n');
  for (const k of kinds) if (!TASK_KINDS.includes(k)) throw new PolicyInputError(`unknown task kind "${k}" (known: ${TASK_KINDS.join(', ')})`, 'kinds');
  if (kinds.length === 0) throw new PolicyInputError('kinds must name at least one task kind', 'kinds');
  const out: Task[] = [];
  for (let i = 0; i < opts.n; i++) {
    const rng = new Rng(deriveSeed(opts.seed, i));
    const kind = kinds[i % kinds.length];
    out.push({ id: `${kind}-${opts.seed}-${i}`, ...makeTask(kind, rng) });
  }
  return out;
}
