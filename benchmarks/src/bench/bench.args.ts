import { Client } from 'pg';
import { RstarError } from '@rstar/contracts';

/** A bench's usage error: a flag with a value it cannot take. */
export class BenchArgumentError extends RstarError {
  constructor(flag: string, message: string) {
    super('invalid_bench_argument', message, flag);
  }
}

/**
 * The positive integer after `name` in `args` (`--events 20000`), or `dflt` when the flag is absent.
 * @throws BenchArgumentError naming the flag when the value is not a positive integer.
 */
export function intArg(args: string[], name: string, dflt: number): number {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v < 1) throw new BenchArgumentError(name, `${name} must be a positive integer, got "${args[i + 1]}"`);
  return v;
}

/** Drops the Postgres schemas a bench archived into (its own, never another's), one connection for all. */
export async function dropBenchSchemas(pgUrl: string, schemas: readonly string[]): Promise<void> {
  const c = new Client({ connectionString: pgUrl });
  await c.connect();
  try {
    for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  } finally {
    await c.end();
  }
}
