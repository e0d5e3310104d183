import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { doubleNumber } from './column.transformers';

/**
 * One rollout (table `rollouts`): request, completion (turns, tool calls and errors, lengths, engine,
 * policy version) and reward (value, rule), as the projector last saw them.
 */
@Entity({ name: 'rollouts' })
@Index('rollouts_run_step_idx', ['runId', 'step', 'groupId'])
@Index('rollouts_group_idx', ['groupId'])
export class RolloutEntity {
  @PrimaryColumn({ name: 'rollout_id', type: 'text' }) rolloutId!: string;
  @Column({ name: 'run_id', type: 'text' }) runId!: string;
  @Column({ name: 'group_id', type: 'text' }) groupId!: string;
  @Column({ type: 'integer' }) step!: number;
  /** Prompt index within the step (-1 until its RolloutRequested is recorded). */
  @Column({ name: 'prompt_idx', type: 'integer' }) promptIdx!: number;
  @Column({ name: 'sample_idx', type: 'integer' }) sampleIdx!: number;
  /** Its request's prompt id (its completion's until the request is recorded). */
  @Column({ name: 'prompt_id', type: 'text', nullable: true }) promptId!: string | null;
  @Column({ type: 'boolean' }) requested!: boolean;
  /** The group size (2G) its request asked the resampler to wait for. */
  @Column({ name: 'resample_expected', type: 'integer', nullable: true }) resampleExpected!: number | null;
  @Column({ type: 'boolean' }) completed!: boolean;
  /** Policy version it was generated with (RolloutCompleted; else its request's). */
  @Column({ name: 'policy_version', type: 'integer', nullable: true }) policyVersion!: number | null;
  @Column({ name: 'engine_id', type: 'text', nullable: true }) engineId!: string | null;
  @Column({ type: 'integer', nullable: true }) turns!: number | null;
  @Column({ name: 'tool_calls', type: 'integer', nullable: true }) toolCalls!: number | null;
  @Column({ name: 'tool_errors', type: 'integer', nullable: true }) toolErrors!: number | null;
  @Column({ name: 'answer_blocks', type: 'integer', nullable: true }) answerBlocks!: number | null;
  @Column({ name: 'format_violations', type: 'integer', nullable: true }) formatViolations!: number | null;
  @Column({ name: 'response_tokens', type: 'integer', nullable: true }) responseTokens!: number | null;
  @Column({ name: 'model_tokens', type: 'integer', nullable: true }) modelTokens!: number | null;
  @Column({ type: 'boolean', nullable: true }) truncated!: boolean | null;
  @Column({ name: 'finish_reason', type: 'text', nullable: true }) finishReason!: string | null;
  @Column({ type: 'double precision', nullable: true, transformer: doubleNumber }) reward!: number | null;
  @Column({ type: 'boolean', nullable: true }) correct!: boolean | null;
  /** The grader's deciding rule. */
  @Column({ type: 'text', nullable: true }) rule!: string | null;
  @Column({ type: 'text', nullable: true }) extracted!: string | null;
  /** Tool calls recorded for it (ToolCallRequested / ToolCallCompleted). */
  @Column({ name: 'calls_recorded', type: 'integer' }) callsRecorded!: number;
}
