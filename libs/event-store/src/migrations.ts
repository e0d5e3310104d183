/**
 * Schema migrations of the event archive (ARCHITECTURE §4), applied in order and recorded in
 * `<schema>.schema_migrations`. Append new entries; never edit an applied one.
 * `{{schema}}` is replaced by the quoted schema name.
 */
export const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'events table',
    sql: `
      CREATE TABLE IF NOT EXISTS {{schema}}.events (
        global_position bigserial PRIMARY KEY,
        transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
        id              text NOT NULL UNIQUE,
        type            text NOT NULL,
        version         integer NOT NULL,
        run_id          text NOT NULL,
        stream_id       text NOT NULL,
        stream_position bigint NOT NULL,
        data            jsonb NOT NULL,
        meta            jsonb NOT NULL,
        recorded_at     timestamptz NOT NULL DEFAULT now(),
        UNIQUE (stream_id, stream_position)
      );
      CREATE INDEX IF NOT EXISTS events_tx_pos_idx ON {{schema}}.events (transaction_id, global_position);
      CREATE INDEX IF NOT EXISTS events_run_idx ON {{schema}}.events (run_id, transaction_id, global_position);
      CREATE INDEX IF NOT EXISTS events_run_type_idx ON {{schema}}.events (run_id, type);
    `,
  },
];
