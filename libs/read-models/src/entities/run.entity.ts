import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintNumber, doubleNumber } from './column.transformers';

/** One run: its start and end, and counters kept current by the projector (table `runs`). */
@Entity({ name: 'runs' })
@Index('runs_last_at_idx', ['lastAt'])
export class RunEntity {
  @PrimaryColumn({ name: 'run_id', type: 'text' }) runId!: string;
  /** `running` until a RunCompleted / RunFailed is recorded (the last one recorded wins). */
  @Column({ type: 'text' }) status!: 'running' | 'completed' | 'failed';
  @Column({ type: 'text', nullable: true }) mode!: 'standalone' | 'distributed' | null;
  @Column({ type: 'bigint', nullable: true, transformer: bigintNumber }) seed!: number | null;
  @Column({ name: 'code_version', type: 'text', nullable: true }) codeVersion!: string | null;
  /** The run config's preset (or name) when it has one. */
  @Column({ type: 'text', nullable: true }) preset!: string | null;
  /** The validated run config of RunStarted. */
  @Column({ type: 'jsonb', nullable: true }) config!: Record<string, unknown> | null;
  @Column({ name: 'rerun_of', type: 'jsonb', nullable: true }) rerunOf!: { runId: string; step: number } | null;
  @Column({ name: 'resumed_from', type: 'text', nullable: true }) resumedFrom!: string | null;
  @Column({ type: 'text', nullable: true }) error!: string | null;
  @Column({ name: 'steps_started', type: 'integer' }) stepsStarted!: number;
  @Column({ name: 'steps_completed', type: 'integer' }) stepsCompleted!: number;
  /** Rollouts with a RolloutRequested, RolloutCompleted or RewardAssigned. */
  @Column({ type: 'integer' }) rollouts!: number;
  @Column({ name: 'rollouts_completed', type: 'integer' }) rolloutsCompleted!: number;
  /** Tool calls recorded (requested or completed) for those rollouts. */
  @Column({ name: 'tool_calls', type: 'integer' }) toolCalls!: number;
  /** Graded rollouts and the sum of their rewards (mean = sum / count). */
  @Column({ type: 'integer' }) rewards!: number;
  @Column({ name: 'reward_sum', type: 'double precision', transformer: doubleNumber }) rewardSum!: number;
  /** Highest PolicyUpdated version (0 before the first update). */
  @Column({ name: 'policy_version', type: 'integer' }) policyVersion!: number;
  @Column({ type: 'bigint', transformer: bigintNumber }) events!: number;
  @Column({ name: 'events_by_type', type: 'jsonb' }) eventsByType!: Record<string, number>;
  /** Archive times of the run's first and last events. */
  @Column({ name: 'first_at', type: 'timestamptz' }) firstAt!: Date;
  @Column({ name: 'last_at', type: 'timestamptz' }) lastAt!: Date;
  /** Archive times of its RunStarted and of its RunCompleted / RunFailed. */
  @Column({ name: 'started_at', type: 'timestamptz', nullable: true }) startedAt!: Date | null;
  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true }) finishedAt!: Date | null;
}
