import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The export position table (one row per topic), beside the archive in its schema. */
export class KafkaExport1764547300000 implements MigrationInterface {
  name = 'KafkaExport1764547300000';

  async up(q: QueryRunner): Promise<void> {
    const s = `"${(q.connection.options as { schema?: string }).schema ?? 'public'}"`;
    await q.query(`CREATE TABLE ${s}."kafka_export_positions" (
      "topic" text PRIMARY KEY, "txid" text NOT NULL, "position" bigint NOT NULL, "events" bigint NOT NULL,
      "offsets" jsonb NOT NULL, "updated_at" timestamptz NOT NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    const s = `"${(q.connection.options as { schema?: string }).schema ?? 'public'}"`;
    await q.query(`DROP TABLE IF EXISTS ${s}."kafka_export_positions"`);
  }
}
