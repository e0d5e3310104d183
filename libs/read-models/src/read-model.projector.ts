import type { DataSource, EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import { parseEvent, type RstarEvent } from '@rstar/contracts';
import { LogFollower } from '@rstar/event-store';
import { counter, createLogger, gauge, histogram, type Logger } from '@rstar/telemetry';
import { GroupEntity } from './entities/group.entity';
import { RolloutEntity } from './entities/rollout.entity';
import { RunEntity } from './entities/run.entity';
import { StepEntity } from './entities/step.entity';
import { ToolCallEntity } from './entities/tool-call.entity';
import {
  batchKeys, foldEvents, PROJECTED_TYPES, settleCounters, stepKey, type ArchivedEvent, type Working,
} from './projection.fold';
import { READ_MODEL_TABLES } from './read-models.datasource';
import { RowWriter } from './row.writer';

/** Options of {@link ReadModelProjector}. */
export interface ProjectorOptions {
  /** The archive's schema (its `events` table). */
  schema: string;
  /** The read models' schema (the DataSource's: tables and checkpoints). */
  readModelSchema: string;
  /** Checkpoint name (default `read-models`). */
  name?: string;
  /** Events per transaction (default 1000). */
  batchSize?: number;
  /**
   * Wait after a batch that was not full (the projector caught up with what is committed), in ms (default
   * 250): events arriving meanwhile are applied together, so a live archive is projected in large batches
   * and the read models trail it by about this much.
   */
  pollMs?: number;
  logger?: Logger;
}

/** A position in the archive's global log (see @rstar/event-store's LogPosition). */
export interface ArchivePosition {
  txid: string;
  position: number;
}

const applied = () => counter('rstar_projection_events_total', 'Archived events applied to a projection', ['projection']);
const lagGauge = () => gauge('rstar_projection_lag_events', 'Archived events a projection has not applied yet', ['projection']);
const batchSeconds = () => histogram('rstar_projection_batch_seconds', 'Time to apply one batch of events (one transaction)', ['projection'], [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]);

/**
 * Keeps the read models current from the archive (docs/design/architecture.md §2 control-plane "projector"). Each
 * {@link step} is one transaction: lock this projection's checkpoint row, read the next batch of events
 * in (transaction id, global position) order below the oldest transaction still in flight (so a late
 * commit is never skipped), load the rows they touch, fold them ({@link foldEvents}), upsert the changed
 * rows and move the checkpoint. The checkpoint commits with the rows, so each event is applied exactly
 * once, even with several projectors (control-plane replicas, a CLI) on one database: the row lock
 * serialises them. {@link rebuild} empties the tables and starts again from position 0.
 */
export class ReadModelProjector {
  readonly name: string;
  private readonly log: Logger;
  /** The read models' schema, quoted. */
  private readonly t: string;
  /** The archive's events table, schema-qualified. */
  private readonly events: string;
  private readonly writers: {
    runs: RowWriter<RunEntity>; steps: RowWriter<StepEntity>; groups: RowWriter<GroupEntity>; rollouts: RowWriter<RolloutEntity>; calls: RowWriter<ToolCallEntity>;
  };
  private readonly follower: LogFollower;

  constructor(
    private readonly ds: DataSource,
    private readonly opts: ProjectorOptions,
  ) {
    this.name = opts.name ?? 'read-models';
    this.log = opts.logger ?? createLogger('projector');
    this.t = `"${opts.readModelSchema}"`;
    this.events = `"${opts.schema}".events`;
    this.writers = {
      runs: new RowWriter(ds, RunEntity), steps: new RowWriter(ds, StepEntity), groups: new RowWriter(ds, GroupEntity),
      rollouts: new RowWriter(ds, RolloutEntity), calls: new RowWriter(ds, ToolCallEntity),
    };
    this.follower = new LogFollower({
      batch: () => this.step(),
      batchSize: opts.batchSize ?? 1000,
      pollMs: opts.pollMs ?? 250,
      refreshLag: () => this.lag(),
      onError: (e, failures) => {
        if (failures === 1 || failures % 20 === 0) this.log.warn('projection batch failed; retrying', { projection: this.name, failures, err: e });
      },
    });
  }

  /** Apply the next batch; resolves with the number of events applied (0 when caught up). */
  async step(): Promise<number> {
    const t0 = performance.now();
    const n = await this.ds.transaction(async (m) => {
      const cp = await this.lockCheckpoint(m);
      const events = await this.readAfter(m, cp, this.opts.batchSize ?? 1000);
      if (!events.length) return 0;
      await this.apply(m, events.map((e) => e.archived));
      const last = events[events.length - 1];
      await m.query(`UPDATE ${this.t}.projection_checkpoints SET txid = $2, position = $3, events = events + $4, updated_at = now() WHERE name = $1`, [
        this.name, last.txid, last.position, events.length,
      ]);
      return events.length;
    });
    if (n) {
      applied().inc({ projection: this.name }, n);
      batchSeconds().observe({ projection: this.name }, (performance.now() - t0) / 1000);
    }
    return n;
  }

  /** Apply batches until none is left; resolves with the events applied. */
  async catchUp(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.step();
      if (!n) return total;
      total += n;
    }
  }

  /**
   * Empty the read models and reset the checkpoint to position 0 (one transaction holding the checkpoint
   * lock, so a running projector continues from 0 with them), then {@link catchUp}. Resolves with the
   * events applied.
   */
  async rebuild(): Promise<number> {
    await this.ds.transaction(async (m) => {
      await this.lockCheckpoint(m);
      await m.query(`TRUNCATE ${READ_MODEL_TABLES.map((x) => `${this.t}."${x}"`).join(', ')}`);
      await m.query(`UPDATE ${this.t}.projection_checkpoints SET txid = '0', position = 0, events = 0, updated_at = now() WHERE name = $1`, [this.name]);
    });
    this.log.info('read models emptied; rebuilding from position 0', { projection: this.name });
    return this.catchUp();
  }

  /** Where the projection stands (position 0 before its first batch). */
  async checkpoint(): Promise<ArchivePosition & { events: number }> {
    const rows = await this.ds.query(`SELECT txid, position, events FROM ${this.t}.projection_checkpoints WHERE name = $1`, [this.name]);
    return rows.length ? { txid: rows[0].txid, position: Number(rows[0].position), events: Number(rows[0].events) } : { txid: '0', position: 0, events: 0 };
  }

  /** Archived events not applied yet (also set as the `rstar_projection_lag_events` gauge). */
  async lag(): Promise<number> {
    const cp = await this.checkpoint();
    const r = await this.ds.query(`SELECT count(*)::bigint AS n FROM ${this.events} WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)`, [cp.txid, cp.position]);
    const n = Number(r[0].n);
    lagGauge().set({ projection: this.name }, n);
    return n;
  }

  /** Run in the background ({@link LogFollower}: full batches back to back while behind, `pollMs` after a partial one). */
  start(): void {
    this.follower.start();
  }

  /** Stop after the batch in progress. */
  stop(): Promise<void> {
    return this.follower.stop();
  }

  private async lockCheckpoint(m: EntityManager): Promise<ArchivePosition> {
    await m.query(
      `INSERT INTO ${this.t}.projection_checkpoints (name, txid, position, events, updated_at) VALUES ($1, '0', 0, 0, now()) ON CONFLICT (name) DO NOTHING`,
      [this.name],
    );
    const rows = await m.query(`SELECT txid, position FROM ${this.t}.projection_checkpoints WHERE name = $1 FOR UPDATE`, [this.name]);
    return { txid: rows[0].txid, position: Number(rows[0].position) };
  }

  /**
   * The next events after `after` (raw SQL on the archive's table, in the same transaction); the data of
   * types the read models only count is not fetched. Each projected event is parsed and upcast like the
   * event store's readers do.
   */
  private async readAfter(m: EntityManager, after: ArchivePosition, limit: number): Promise<Array<ArchivePosition & { archived: ArchivedEvent }>> {
    const rows: any[] = await m.query(
      `SELECT global_position, transaction_id::text AS txid, id, type, version, run_id, stream_id, recorded_at,
              CASE WHEN type = ANY($4::text[]) THEN data END AS data, CASE WHEN type = ANY($4::text[]) THEN meta END AS meta
       FROM ${this.events}
       WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint) AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY transaction_id, global_position LIMIT $3`,
      [after.txid, after.position, limit, PROJECTED_TYPES],
    );
    return rows.map((r) => {
      const event: ArchivedEvent['event'] =
        r.data === null
          ? { id: r.id, type: r.type, runId: r.run_id }
          : (parseEvent({ id: r.id, type: r.type, version: r.version, runId: r.run_id, streamId: r.stream_id, data: r.data, meta: r.meta }) as RstarEvent);
      return { txid: r.txid, position: Number(r.global_position), archived: { event, archivedAt: new Date(r.recorded_at) } };
    });
  }

  /** Load what the batch touches, fold it, count earlier tool calls of new rollouts, write the changed rows. */
  private async apply(m: EntityManager, events: ArchivedEvent[]): Promise<void> {
    const k = batchKeys(events);
    // One after the other: the transaction has one connection.
    // `= ANY($1::text[])`: one parameter, where typeorm's In() builds one per key (10 µs per event on this path).
    const byKey = <E extends ObjectLiteral>(entity: EntityTarget<E>, column: string, keys: Set<string>): Promise<E[]> =>
      keys.size ? m.createQueryBuilder(entity, 'x').where(`x.${column} = ANY(:keys::text[])`, { keys: [...keys] }).getMany() : Promise.resolve([]);
    const runs = await byKey(RunEntity, 'run_id', k.runs);
    const groups = await byKey(GroupEntity, 'group_id', k.groups);
    const rollouts = await byKey(RolloutEntity, 'rollout_id', k.rollouts);
    const calls = await byKey(ToolCallEntity, 'call_id', k.calls);
    const steps = await this.loadSteps(m, k.steps);
    const w: Working = {
      runs: new Map(runs.map((r) => [r.runId, r])),
      steps: new Map(steps.map((s) => [stepKey(s.runId, s.step), s])),
      groups: new Map(groups.map((g) => [g.groupId, g])),
      rollouts: new Map(rollouts.map((r) => [r.rolloutId, r])),
      calls: new Map(calls.map((c) => [c.callId, c])),
    };
    const fold = foldEvents(w, events);
    const earlier = new Map<string, number>();
    if (fold.newRollouts.size) {
      const rows = await m.query(`SELECT rollout_id, count(*)::int AS n FROM ${this.t}.tool_calls WHERE rollout_id = ANY($1::text[]) GROUP BY rollout_id`, [[...fold.newRollouts]]);
      for (const r of rows) earlier.set(r.rollout_id, Number(r.n));
    }
    settleCounters(w, fold, earlier);
    const pick = <T>(map: Map<string, T>, keys: Set<string>) => [...keys].map((x) => map.get(x)!);
    const out = this.writers;
    await out.runs.upsert(m, pick(w.runs, fold.dirty.runs) as RunEntity[]);
    await out.steps.upsert(m, pick(w.steps, fold.dirty.steps) as StepEntity[]);
    await out.groups.upsert(m, pick(w.groups, fold.dirty.groups) as GroupEntity[]);
    await out.rollouts.upsert(m, pick(w.rollouts, fold.dirty.rollouts) as RolloutEntity[]);
    await out.calls.upsert(m, pick(w.calls, fold.dirty.calls) as ToolCallEntity[]);
  }

  private async loadSteps(m: EntityManager, keys: Array<{ runId: string; step: number }>): Promise<StepEntity[]> {
    if (!keys.length) return [];
    return m
      .createQueryBuilder(StepEntity, 's')
      .where('(s.run_id, s.step) IN (SELECT * FROM unnest(:runs::text[], :steps::int[]))', { runs: keys.map((x) => x.runId), steps: keys.map((x) => x.step) })
      .getMany();
  }
}
