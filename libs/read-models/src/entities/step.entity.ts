import { Column, Entity, PrimaryColumn } from 'typeorm';
import { doubleNumber } from './column.transformers';

/**
 * One step of a run (table `steps`): the facts of StepStarted / StepOptimized / StepCompleted and
 * counters over the step's groups and rollouts kept current by the projector.
 */
@Entity({ name: 'steps' })
export class StepEntity {
  @PrimaryColumn({ name: 'run_id', type: 'text' }) runId!: string;
  @PrimaryColumn({ type: 'integer' }) step!: number;
  @Column({ type: 'text', nullable: true }) stage!: string | null;
  /** Policy version the step's rollouts were sampled from (StepStarted). */
  @Column({ name: 'policy_version', type: 'integer', nullable: true }) policyVersion!: number | null;
  @Column({ type: 'boolean' }) started!: boolean;
  @Column({ type: 'boolean' }) optimized!: boolean;
  @Column({ type: 'boolean' }) completed!: boolean;
  /** Prompts of StepStarted (null without one). */
  @Column({ name: 'prompt_count', type: 'integer', nullable: true }) promptCount!: number | null;
  @Column({ type: 'integer' }) groups!: number;
  @Column({ name: 'groups_kept', type: 'integer' }) groupsKept!: number;
  @Column({ name: 'groups_all_equal', type: 'integer' }) groupsAllEqual!: number;
  @Column({ name: 'groups_timed_out', type: 'integer' }) groupsTimedOut!: number;
  @Column({ name: 'rollouts_requested', type: 'integer' }) rolloutsRequested!: number;
  @Column({ name: 'rollouts_completed', type: 'integer' }) rolloutsCompleted!: number;
  @Column({ type: 'integer' }) rewards!: number;
  @Column({ name: 'reward_sum', type: 'double precision', transformer: doubleNumber }) rewardSum!: number;
  /** Over the completed rollouts: tool calls, erroneous ones, response tokens, truncated rollouts. */
  @Column({ name: 'tool_calls', type: 'integer' }) toolCalls!: number;
  @Column({ name: 'tool_errors', type: 'integer' }) toolErrors!: number;
  @Column({ name: 'response_tokens', type: 'bigint', transformer: doubleNumber }) responseTokens!: number;
  @Column({ type: 'integer' }) truncated!: number;
  @Column({ type: 'double precision', nullable: true, transformer: doubleNumber }) loss!: number | null;
  @Column({ name: 'clip_fraction', type: 'double precision', nullable: true, transformer: doubleNumber }) clipFraction!: number | null;
  @Column({ name: 'approx_kl', type: 'double precision', nullable: true, transformer: doubleNumber }) approxKl!: number | null;
  @Column({ name: 'grad_norm', type: 'double precision', nullable: true, transformer: doubleNumber }) gradNorm!: number | null;
  @Column({ name: 'advantage_mean', type: 'double precision', nullable: true, transformer: doubleNumber }) advantageMean!: number | null;
  @Column({ name: 'advantage_std', type: 'double precision', nullable: true, transformer: doubleNumber }) advantageStd!: number | null;
  @Column({ name: 'batch_hash', type: 'text', nullable: true }) batchHash!: string | null;
  @Column({ name: 'checkpoint_hash', type: 'text', nullable: true }) checkpointHash!: string | null;
  @Column({ name: 'checkpoint_uri', type: 'text', nullable: true }) checkpointUri!: string | null;
  @Column({ name: 'new_policy_version', type: 'integer', nullable: true }) newPolicyVersion!: number | null;
  /** StepCompleted's metrics as recorded. */
  @Column({ type: 'jsonb', nullable: true }) metrics!: Record<string, number | null> | null;
  @Column({ name: 'started_at', type: 'timestamptz', nullable: true }) startedAt!: Date | null;
  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true }) completedAt!: Date | null;
}
