import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '@rstar/event-store';
import { REPO_ROOT } from '@rstar/sandbox';
import { CliInputError } from './cli.errors';

/** Where a command finds a run's archive. */
export interface ArchiveSourceOptions {
  database?: string;
  dataDir?: string;
  schema?: string;
}

/** An opened archive: its Postgres URL (the embedded one for a standalone folder), and a close. */
export interface OpenedArchive {
  url: string;
  schema: string | undefined;
  /** True for a standalone PGlite folder (one connection at a time). */
  embedded: boolean;
  /** Where it is, for messages. */
  where: string;
  close(): Promise<void>;
}

/**
 * The archive of `--database URL` (or env RSTAR_DATABASE_URL), else the standalone PGlite folder
 * (`--data-dir`, default `runs/<RUN>/events` as `rstar train` writes it), served on a local socket.
 * @throws Error naming the flags when neither exists.
 */
export async function openArchive(o: ArchiveSourceOptions, runId?: string): Promise<OpenedArchive> {
  const url = o.database ?? (process.env.RSTAR_DATABASE_URL || undefined);
  if (url) return { url, schema: o.schema, embedded: false, where: `the Postgres archive (schema ${o.schema ?? 'rstar'})`, close: async () => undefined };
  const dir = o.dataDir ?? (runId ? join(REPO_ROOT, 'runs', runId, 'events') : undefined);
  if (!dir || !existsSync(dir)) throw new CliInputError(`no archive${dir ? ` at ${dir}` : ''}: pass --data-dir (a run's <out>/events folder) or --database URL (or set RSTAR_DATABASE_URL)`);
  const pg = await startEmbeddedPostgres({ dataDir: dir });
  return { url: pg.url, schema: o.schema, embedded: true, where: `the archive ${dir}`, close: () => pg.close() };
}
