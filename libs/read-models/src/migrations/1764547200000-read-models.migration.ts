import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The schema the DataSource was opened on (`schema` option), quoted. */
function schemaOf(q: QueryRunner): string {
  const s = (q.connection.options as { schema?: string }).schema ?? 'public';
  return `"${s}"`;
}

/**
 * The read models' first schema: `runs`, `steps`, `groups`, `rollouts`, `tool_calls` and
 * `projection_checkpoints`, in the schema the DataSource was opened on (the read models' own). Run by typeorm's
 * migration runner (`openReadModels`); the entity definitions must match (a test checks that typeorm's
 * schema diff is empty).
 */
export class ReadModels1764547200000 implements MigrationInterface {
  name = 'ReadModels1764547200000';

  async up(q: QueryRunner): Promise<void> {
    const s = schemaOf(q);
    await q.query(`CREATE TABLE ${s}."runs" (
      "run_id" text PRIMARY KEY, "status" text NOT NULL, "mode" text, "seed" bigint, "code_version" text, "preset" text,
      "config" jsonb, "rerun_of" jsonb, "resumed_from" text, "error" text,
      "steps_started" integer NOT NULL, "steps_completed" integer NOT NULL, "rollouts" integer NOT NULL,
      "rollouts_completed" integer NOT NULL, "tool_calls" integer NOT NULL, "rewards" integer NOT NULL,
      "reward_sum" double precision NOT NULL, "policy_version" integer NOT NULL, "events" bigint NOT NULL,
      "events_by_type" jsonb NOT NULL, "first_at" timestamptz NOT NULL, "last_at" timestamptz NOT NULL,
      "started_at" timestamptz, "finished_at" timestamptz)`);
    await q.query(`CREATE INDEX "runs_last_at_idx" ON ${s}."runs" ("last_at")`);
    await q.query(`CREATE TABLE ${s}."steps" (
      "run_id" text NOT NULL, "step" integer NOT NULL, "stage" text, "policy_version" integer,
      "started" boolean NOT NULL, "optimized" boolean NOT NULL, "completed" boolean NOT NULL, "prompt_count" integer,
      "groups" integer NOT NULL, "groups_kept" integer NOT NULL, "groups_all_equal" integer NOT NULL, "groups_timed_out" integer NOT NULL,
      "rollouts_requested" integer NOT NULL, "rollouts_completed" integer NOT NULL, "rewards" integer NOT NULL,
      "reward_sum" double precision NOT NULL, "tool_calls" integer NOT NULL, "tool_errors" integer NOT NULL,
      "response_tokens" bigint NOT NULL, "truncated" integer NOT NULL, "loss" double precision, "clip_fraction" double precision,
      "approx_kl" double precision, "grad_norm" double precision, "advantage_mean" double precision, "advantage_std" double precision,
      "batch_hash" text, "checkpoint_hash" text, "checkpoint_uri" text, "new_policy_version" integer, "metrics" jsonb,
      "started_at" timestamptz, "completed_at" timestamptz,
      PRIMARY KEY ("run_id", "step"))`);
    await q.query(`CREATE TABLE ${s}."groups" (
      "group_id" text PRIMARY KEY, "run_id" text NOT NULL, "step" integer NOT NULL, "prompt_idx" integer NOT NULL, "prompt_id" text,
      "resampled" boolean NOT NULL, "mode" text, "seed" text, "received" integer, "expected" integer, "group_dropped" text,
      "kept" jsonb, "dropped" jsonb, "penalties" jsonb, "resampled_rewards" jsonb)`);
    await q.query(`CREATE INDEX "groups_run_step_idx" ON ${s}."groups" ("run_id", "step", "prompt_idx")`);
    await q.query(`CREATE TABLE ${s}."rollouts" (
      "rollout_id" text PRIMARY KEY, "run_id" text NOT NULL, "group_id" text NOT NULL, "step" integer NOT NULL,
      "prompt_idx" integer NOT NULL, "sample_idx" integer NOT NULL, "prompt_id" text,
      "requested" boolean NOT NULL, "resample_expected" integer, "completed" boolean NOT NULL,
      "policy_version" integer, "engine_id" text, "turns" integer, "tool_calls" integer, "tool_errors" integer,
      "answer_blocks" integer, "format_violations" integer, "response_tokens" integer, "model_tokens" integer,
      "truncated" boolean, "finish_reason" text, "reward" double precision, "correct" boolean, "rule" text, "extracted" text,
      "calls_recorded" integer NOT NULL)`);
    await q.query(`CREATE INDEX "rollouts_run_step_idx" ON ${s}."rollouts" ("run_id", "step", "group_id")`);
    await q.query(`CREATE INDEX "rollouts_group_idx" ON ${s}."rollouts" ("group_id")`);
    await q.query(`CREATE TABLE ${s}."tool_calls" (
      "call_id" text PRIMARY KEY, "run_id" text NOT NULL, "rollout_id" text NOT NULL, "turn" integer NOT NULL, "tool" text,
      "requested" boolean NOT NULL, "timeout_ms" integer, "completed" boolean NOT NULL, "status" text,
      "wall_ms" double precision, "cpu_ms" double precision, "exit_code" integer, "signal" text, "truncated" boolean,
      "session_reset" boolean)`);
    await q.query(`CREATE INDEX "tool_calls_rollout_idx" ON ${s}."tool_calls" ("rollout_id")`);
    await q.query(`CREATE TABLE ${s}."projection_checkpoints" (
      "name" text PRIMARY KEY, "txid" text NOT NULL, "position" bigint NOT NULL, "events" bigint NOT NULL, "updated_at" timestamptz NOT NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    const s = schemaOf(q);
    for (const t of ['projection_checkpoints', 'tool_calls', 'rollouts', 'groups', 'steps', 'runs']) await q.query(`DROP TABLE IF EXISTS ${s}."${t}"`);
  }
}
