import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { EventData } from '@rstar/contracts';

/** One group (one prompt of one step; table `groups`) and its GroupResampled decision. */
@Entity({ name: 'groups' })
@Index('groups_run_step_idx', ['runId', 'step', 'promptIdx'])
export class GroupEntity {
  @PrimaryColumn({ name: 'group_id', type: 'text' }) groupId!: string;
  @Column({ name: 'run_id', type: 'text' }) runId!: string;
  @Column({ type: 'integer' }) step!: number;
  @Column({ name: 'prompt_idx', type: 'integer' }) promptIdx!: number;
  @Column({ name: 'prompt_id', type: 'text', nullable: true }) promptId!: string | null;
  @Column({ type: 'boolean' }) resampled!: boolean;
  @Column({ type: 'text', nullable: true }) mode!: string | null;
  @Column({ type: 'text', nullable: true }) seed!: string | null;
  @Column({ type: 'integer', nullable: true }) received!: number | null;
  @Column({ type: 'integer', nullable: true }) expected!: number | null;
  @Column({ name: 'group_dropped', type: 'text', nullable: true }) groupDropped!: 'all_equal' | 'timeout' | null;
  /** Kept rollout ids in RoC's order, dropped ids, penalties and the rewards RoC saw (GroupResampled). */
  @Column({ type: 'jsonb', nullable: true }) kept!: string[] | null;
  @Column({ type: 'jsonb', nullable: true }) dropped!: string[] | null;
  @Column({ type: 'jsonb', nullable: true }) penalties!: Array<{ rolloutId: string; pErr: number; pFormat: number }> | null;
  @Column({ name: 'resampled_rewards', type: 'jsonb', nullable: true }) resampledRewards!: Record<string, number> | null;
  /** A timed-out group's `GroupResampled.timeout` (budget, wait, what was missing, reason); null otherwise. */
  @Column({ type: 'jsonb', nullable: true }) timeout!: NonNullable<EventData<'GroupResampled'>['timeout']> | null;
}
