/**
 * Schema migrations of the event archive (docs/design/architecture.md §4), applied in order and recorded in
 * `<schema>.schema_migrations`. Append new entries; never edit an applied one.
 * `{{schema}}` is replaced by the quoted schema name. Each runs in a transaction with
 * `rstar.migrating = on`, the only way past the append-only trigger of migration 2.
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
  {
    version: 2,
    name: 'hash chain and append-only events',
    // The chain hash of each event (hash-chain.ts), computed by the archiver at append time; null for
    // events archived before. The trigger refuses UPDATE, DELETE and TRUNCATE of events to everyone,
    // owner and superuser included, unless a migration set rstar.migrating; grants keep the services
    // from it as well (roles.sql.ts).
    sql: `
      ALTER TABLE {{schema}}.events ADD COLUMN IF NOT EXISTS hash bytea;
      CREATE OR REPLACE FUNCTION {{schema}}.events_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF coalesce(current_setting('rstar.migrating', true), '') = 'on' THEN
          IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'the event archive %.events is append-only: % refused (only a migration may rewrite events)', TG_TABLE_SCHEMA, TG_OP
          USING ERRCODE = 'RS001', HINT = 'events are never changed or removed; append a correcting event instead';
      END
      $fn$;
      DROP TRIGGER IF EXISTS events_append_only_rows ON {{schema}}.events;
      CREATE TRIGGER events_append_only_rows BEFORE UPDATE OR DELETE ON {{schema}}.events
        FOR EACH ROW EXECUTE FUNCTION {{schema}}.events_append_only();
      DROP TRIGGER IF EXISTS events_append_only_truncate ON {{schema}}.events;
      CREATE TRIGGER events_append_only_truncate BEFORE TRUNCATE ON {{schema}}.events
        FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.events_append_only();
    `,
  },
  {
    version: 3,
    name: 'quarantine outside the runs\' chains',
    // What the archive refuses to store as genuine (issue 27): dead letters (a consumer refused or could not
    // handle a message: a type on another type's subject, a bad or missing signature, an invalid payload)
    // and id collisions (an event whose id is stored with different content). Kept with the reason, apart
    // from events, so a run's chain holds only what its producers published, and a dead letter cannot
    // make an honest run's chain look broken.
    sql: `
      CREATE TABLE IF NOT EXISTS {{schema}}.quarantine (
        seq          bigserial PRIMARY KEY,
        event_id     text NOT NULL,
        kind         text NOT NULL CHECK (kind IN ('dead_letter', 'id_collision')),
        run_id       text NOT NULL,
        subject      text,
        consumer     text,
        field        text,
        reason       text NOT NULL,
        payload      text NOT NULL,
        recorded_at  timestamptz NOT NULL DEFAULT now(),
        UNIQUE (event_id, kind)
      );
      CREATE INDEX IF NOT EXISTS quarantine_run_idx ON {{schema}}.quarantine (run_id, seq);
    `,
  },
  {
    version: 4,
    name: 'signed checkpoints of the runs\' chains',
    // The archiver's statements about a run's chain (chain.checkpoints.ts): every N events and when the run
    // ends (sealed), the head (position and hash) of each of the run's streams and the count of chained
    // events, signed with the archiver's key. Append-only like events.
    sql: `
      CREATE TABLE IF NOT EXISTS {{schema}}.chain_checkpoints (
        run_id      text NOT NULL,
        seq         integer NOT NULL,
        events      bigint NOT NULL,
        streams     jsonb NOT NULL,
        sealed      boolean NOT NULL,
        key_id      text,
        sig         text,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, seq)
      );
      DROP TRIGGER IF EXISTS chain_checkpoints_append_only_rows ON {{schema}}.chain_checkpoints;
      CREATE TRIGGER chain_checkpoints_append_only_rows BEFORE UPDATE OR DELETE ON {{schema}}.chain_checkpoints
        FOR EACH ROW EXECUTE FUNCTION {{schema}}.events_append_only();
      DROP TRIGGER IF EXISTS chain_checkpoints_append_only_truncate ON {{schema}}.chain_checkpoints;
      CREATE TRIGGER chain_checkpoints_append_only_truncate BEFORE TRUNCATE ON {{schema}}.chain_checkpoints
        FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.events_append_only();
    `,
  },
  {
    version: 5,
    name: 'the migration flag honoured for the migration role only',
    // Anyone may set a custom setting, so `rstar.migrating` alone would let any role with a (mis)granted
    // UPDATE or DELETE rewrite events. The trigger now honours it only for a role with the privileges of
    // the table's owner (the migration role, or a superuser, who could drop the trigger anyway).
    sql: `
      CREATE OR REPLACE FUNCTION {{schema}}.events_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        flag boolean := coalesce(current_setting('rstar.migrating', true), '') = 'on';
        owner_role name := (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = TG_RELID);
      BEGIN
        IF flag AND pg_has_role(current_user, owner_role, 'USAGE') THEN
          IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
          RETURN NEW;
        END IF;
        IF flag THEN
          RAISE EXCEPTION 'the event archive %.% is append-only: % refused (rstar.migrating is honoured for the migration role %, not for %)', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP, owner_role, current_user
            USING ERRCODE = 'RS001', HINT = 'only \`rstar db migrate\`, run as the migration role, may rewrite the archive';
        END IF;
        RAISE EXCEPTION 'the event archive %.% is append-only: % refused (only a migration may rewrite events)', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP
          USING ERRCODE = 'RS001', HINT = 'events are never changed or removed; append a correcting event instead';
      END
      $fn$;
    `,
  },
];

/** The newest migration version this code knows. */
export const LATEST_MIGRATION = MIGRATIONS[MIGRATIONS.length - 1].version;
