import { createLogger } from '@rstar/telemetry';
import { securedSideBySide } from './secured-events';
import { dropBenchSchemas, intArg } from './bench.args';

/**
 * `pnpm bench security [--events N] [--producers P] [--batch B]`: only the security overhead of the event
 * path (`pnpm bench events` reports the same figures after its own): N (default 50,000) events published
 * by P producer processes and archived in Postgres, open vs. with NATS users, per-subject permissions and
 * Ed25519 signatures, side by side on private nats-servers (see ./secured-events.ts). Postgres:
 * RSTAR_DATABASE_URL, else the test server; private schemas, dropped at the end.
 */
export async function run(args: string[]): Promise<object> {
  const n = intArg(args, '--events', 50_000);
  const producers = intArg(args, '--producers', 4);
  const batch = intArg(args, '--batch', 500);
  const pgUrl = process.env.RSTAR_DATABASE_URL || process.env.RSTAR_TEST_DATABASE_URL || 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
  const tag = `benchsec${process.pid}${Date.now().toString(36)}`;
  const dropSchemas: string[] = [];
  const progress = (msg: string) => process.stderr.write(`[security] ${msg}\n`);
  try {
    const figures = await securedSideBySide({ n, producers, batch, pgUrl, tag, progress, quiet: createLogger('bench', { level: 'warn' }), dropSchemas });
    return { bench: 'security', events: n, producers, batch, ...figures };
  } finally {
    await dropBenchSchemas(pgUrl, dropSchemas);
  }
}

