import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { doubleNumber } from './column.transformers';

/** One tool call (table `tool_calls`): what was asked and how the sandbox answered (outputs stay in the archive). */
@Entity({ name: 'tool_calls' })
@Index('tool_calls_rollout_idx', ['rolloutId'])
export class ToolCallEntity {
  @PrimaryColumn({ name: 'call_id', type: 'text' }) callId!: string;
  @Column({ name: 'run_id', type: 'text' }) runId!: string;
  @Column({ name: 'rollout_id', type: 'text' }) rolloutId!: string;
  @Column({ type: 'integer' }) turn!: number;
  @Column({ type: 'text', nullable: true }) tool!: string | null;
  @Column({ type: 'boolean' }) requested!: boolean;
  @Column({ name: 'timeout_ms', type: 'integer', nullable: true }) timeoutMs!: number | null;
  @Column({ type: 'boolean' }) completed!: boolean;
  /** ok | runtime_error | timeout | memory_limit | output_limit | killed | sandbox_error. */
  @Column({ type: 'text', nullable: true }) status!: string | null;
  @Column({ name: 'wall_ms', type: 'double precision', nullable: true, transformer: doubleNumber }) wallMs!: number | null;
  @Column({ name: 'cpu_ms', type: 'double precision', nullable: true, transformer: doubleNumber }) cpuMs!: number | null;
  @Column({ name: 'exit_code', type: 'integer', nullable: true }) exitCode!: number | null;
  @Column({ type: 'text', nullable: true }) signal!: string | null;
  @Column({ type: 'boolean', nullable: true }) truncated!: boolean | null;
  @Column({ name: 'session_reset', type: 'boolean', nullable: true }) sessionReset!: boolean | null;
}
