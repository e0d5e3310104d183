import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The schema the DataSource was opened on (`schema` option), quoted. */
function schemaOf(q: QueryRunner): string {
  const s = (q.connection.options as { schema?: string }).schema ?? 'public';
  return `"${s}"`;
}

/**
 * `groups.timeout`: why a group timed out (`GroupResampled.timeout`: budget, wait, missing rollouts, reason).
 * Groups projected before it keep null until `rstar projections rebuild` folds their events again.
 */
export class GroupTimeout1764633600000 implements MigrationInterface {
  name = 'GroupTimeout1764633600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${schemaOf(q)}."groups" ADD COLUMN "timeout" jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${schemaOf(q)}."groups" DROP COLUMN IF EXISTS "timeout"`);
  }
}
