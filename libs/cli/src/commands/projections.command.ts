import type { Command } from 'commander';
import { EventStore } from '@rstar/event-store';
import { ReadModels } from '@rstar/read-models';
import { openArchive, type ArchiveSourceOptions } from '../archive.source';
import { CliInputError } from '../cli.errors';

/**
 * `rstar projections rebuild|status`: the read models (runs, steps, groups, rollouts, tool calls) of an
 * archive (`--database URL` / RSTAR_DATABASE_URL, or a standalone run's `--data-dir`).
 * - `rebuild`: empty them and apply every archived event again from position 0 (one transaction per
 *   batch; a running control-plane projector continues with them), printing the events applied.
 * - `status`: where the projection stands and how many archived events it has not applied.
 */
export function register(program: Command): void {
  const cmd = program.command('projections').description('the read models built from the event archive');
  const source = (c: Command) =>
    c
      .option('--database <url>', 'Postgres archive (default env RSTAR_DATABASE_URL)')
      .option('--data-dir <dir>', "a standalone run's PGlite archive (its <out>/events folder)")
      .option('--schema <name>', 'event-store schema (default rstar)');

  source(cmd.command('rebuild'))
    .description('empty the read models and rebuild them from position 0 of the archive')
    .option('--batch <n>', 'events per transaction', '1000')
    .action(async (o: ArchiveSourceOptions & { batch: string }) => {
      const batch = Number(o.batch);
      if (!Number.isInteger(batch) || batch < 1) throw new CliInputError(`--batch must be a positive integer, got "${o.batch}"`);
      await withReadModels(o, async (rm) => {
        const t0 = performance.now();
        const n = await rm.projector({ batchSize: batch }).rebuild();
        const s = (performance.now() - t0) / 1000;
        process.stdout.write(`rebuilt the read models from ${n} events in ${s.toFixed(1)} s (${Math.round(n / Math.max(s, 1e-3))} events/s)\n`);
      });
    });

  source(cmd.command('status'))
    .description('where the projection stands')
    .option('--json', 'print JSON')
    .action(async (o: ArchiveSourceOptions & { json?: boolean }) => {
      await withReadModels(o, async (rm) => {
        const p = rm.projector();
        const status = { ...(await p.checkpoint()), lag: await p.lag(), runs: (await rm.repository.listRuns({ limit: 10_000 })).length };
        process.stdout.write(
          o.json ? JSON.stringify(status) + '\n' : `read models: ${status.events} events applied (position ${status.txid}-${status.position}), ${status.lag} not yet, ${status.runs} runs\n`,
        );
      });
    });
}

/** Open the archive (its migrations first: the projector reads its events table) and its read models. */
async function withReadModels(o: ArchiveSourceOptions, fn: (rm: ReadModels) => Promise<void>): Promise<void> {
  if (!o.database && !o.dataDir && !process.env.RSTAR_DATABASE_URL) throw new CliInputError('pass --database URL (or set RSTAR_DATABASE_URL) or --data-dir DIR');
  const archive = await openArchive(o);
  try {
    const store = await EventStore.connect({ connectionString: archive.url, schema: archive.schema, maxConnections: 1 });
    await store.close();
    const rm = await ReadModels.open({ connectionString: archive.url, schema: archive.schema, poolSize: archive.embedded ? 1 : 2 });
    try {
      await fn(rm);
    } finally {
      await rm.close();
    }
  } finally {
    await archive.close();
  }
}
