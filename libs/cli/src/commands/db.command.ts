import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Client } from 'pg';
import { ARCHIVE_LOGINS, archiveRoleNames, archiveRolesSql, EventStore, kafkaExportGrantsSql, LATEST_MIGRATION } from '@rstar/event-store';
import { ReadModels, readModelSchemaOf } from '@rstar/read-models';
import { CliInputError } from '../cli.errors';

function databaseUrl(o: { database?: string }): string {
  const url = o.database ?? process.env.RSTAR_DATABASE_URL;
  if (!url) throw new CliInputError('pass --database URL (or set RSTAR_DATABASE_URL)');
  return url;
}

/**
 * Apply the archive's migrations, the read models' (schema `<schema>_read`) and the Kafka export's position
 * table (beside the archive; libs/kafka-export) as the role of `url`, then give `<prefix>control_plane` its
 * rights on the export's table where that login exists (`kafkaExportGrantsSql`): the control plane runs the
 * export with its own role, which may not create tables.
 */
async function migrateAll(url: string, schema: string, prefix: string): Promise<void> {
  const store = await EventStore.connect({ connectionString: url, schema, maxConnections: 1 });
  await store.close();
  const rm = await ReadModels.open({ connectionString: url, schema, poolSize: 1 });
  await rm.close();
  // Loaded here: the export's module brings kafkajs, which no other CLI command needs.
  const { openExportPositions } = await import('@rstar/kafka-export');
  const positions = await openExportPositions({ connectionString: url, schema, poolSize: 1 });
  try {
    await positions.query(kafkaExportGrantsSql({ schema, prefix }));
  } finally {
    await positions.destroy();
  }
}

/**
 * `rstar db migrate|roles`: the archive's schema and its least-privilege roles (docs/security.md).
 * - `migrate [--database URL] [--schema S] [--prefix rstar_]`: apply pending migrations of the archive
 *   (schema S), of the read models (schema `S_read`) and of the Kafka export's position table, as the
 *   migration role (`<prefix>owner`, or a superuser the first time); services with `RSTAR_DB_MIGRATE=false`
 *   only check they are current.
 * - `roles [--database URL] [--schema S] [--prefix rstar_] [--passwords-out FILE] [--print]`: create or
 *   update the roles (`archiveRolesSql`; as a superuser), each login with a new random password, and
 *   write each service's connection URL to FILE (0600); `--print` only prints the SQL.
 */
export function register(program: Command): void {
  const db = program.command('db').description("the archive's schema and roles");

  db.command('migrate')
    .description("apply pending migrations of the archive, the read models and the Kafka export's table (as the migration role)")
    .option('--database <url>', 'Postgres URL of the migration role (default env RSTAR_DATABASE_URL)')
    .option('--schema <name>', 'event-store schema', 'rstar')
    .option('--prefix <prefix>', 'role name prefix of `rstar db roles` (the control plane login gets the Kafka export table)', 'rstar_')
    .action(async (o: { database?: string; schema: string; prefix: string }) => {
      await migrateAll(databaseUrl(o), o.schema, o.prefix);
      process.stdout.write(`archive schema ${o.schema} is at migration ${LATEST_MIGRATION}; read models in ${readModelSchemaOf(o)} and the Kafka export's table are current\n`);
    });

  db.command('roles')
    .description('create the least-privilege roles of the archive (run as a superuser)')
    .option('--database <url>', 'Postgres URL of a superuser (default env RSTAR_DATABASE_URL)')
    .option('--schema <name>', 'event-store schema', 'rstar')
    .option('--prefix <prefix>', 'role name prefix', 'rstar_')
    .option('--passwords-out <file>', "write each login's connection URL here (0600)")
    .option('--print', 'print the SQL instead of running it (passwords left unchanged)')
    .action(async (o: { database?: string; schema: string; prefix: string; passwordsOut?: string; print?: boolean }) => {
      if (o.print) {
        process.stdout.write(archiveRolesSql({ schema: o.schema, prefix: o.prefix }) + '\n');
        return;
      }
      if (!o.passwordsOut) throw new CliInputError('--passwords-out FILE is required: every login gets a new password, written there (or use --print)');
      const url = databaseUrl(o);
      const names = archiveRoleNames(o.prefix);
      const passwords = Object.fromEntries(ARCHIVE_LOGINS.map((l) => [l, randomBytes(24).toString('base64url')]));
      // The schemas and their tables must exist before they can be handed to the migration role.
      await migrateAll(url, o.schema, o.prefix);
      const c = new Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(archiveRolesSql({ schema: o.schema, prefix: o.prefix, passwords }));
      } finally {
        await c.end();
      }
      const lines = ARCHIVE_LOGINS.map((l) => {
        const u = new URL(url);
        u.username = names.logins[l];
        u.password = passwords[l];
        return `${l}=${u.toString()}`;
      });
      writeFileSync(o.passwordsOut, lines.join('\n') + '\n', { mode: 0o600 });
      process.stdout.write(
        `roles of schema ${o.schema} and ${readModelSchemaOf(o)}: ${Object.values(names.logins).join(', ')} (groups ${names.writer}, ${names.reader}, ${names.readModels})\n` +
          `connection URLs (RSTAR_DATABASE_URL per service, with RSTAR_DB_MIGRATE=false) written to ${o.passwordsOut}; ` +
          `the line "owner" is the migration role: for \`rstar db migrate\` only\n`,
      );
    });
}
