import type { EventData } from '@rstar/contracts';
import { groupAdvantages } from '@rstar/grpo';
import type { RunIndex } from './run.index';

/** One rollout of a group as the resampler saw it. */
export interface GroupMemberRow {
  rolloutId: string;
  sampleIdx: number;
  reward: number | null;
  pErr: number | null;
  pFormat: number | null;
  status: 'kept' | 'dropped' | 'pending';
  /** Group-relative advantage among the kept rollouts (docs/design/protocol.md §6); null when not kept. */
  advantage: number | null;
}

/** One group (one prompt of one step): rewards, RoC penalties, kept and dropped. */
export interface GroupRow {
  groupId: string;
  step: number;
  promptIdx: number;
  promptId: string | null;
  mode: string | null;
  seed: string | null;
  received: number | null;
  expected: number | null;
  groupDropped: 'all_equal' | 'timeout' | null;
  /** Why the group timed out: its budget, the wait, what was missing and the one-line reason (null otherwise, and for runs recorded before it). */
  timeout: NonNullable<EventData<'GroupResampled'>['timeout']> | null;
  /** Not yet resampled (no GroupResampled recorded). */
  pending: boolean;
  kept: number;
  positives: number;
  members: GroupMemberRow[];
}

/**
 * Project the group table (pure). `step` limits it to one step, `groupId` to one group, `dropped` to the
 * groups dropped for that reason; groups come in (step, prompt) order,
 * members in sample order. Advantages are recomputed from the recorded rewards with `groupAdvantages`,
 * exactly as the step driver builds its batch.
 */
export function groupTable(ix: RunIndex, opts: { step?: number; groupId?: string; dropped?: 'all_equal' | 'timeout' } = {}): GroupRow[] {
  const rows: GroupRow[] = [];
  for (const s of ix.steps) {
    if (opts.step !== undefined && s.step !== opts.step) continue;
    for (const gid of s.groupIds) {
      if (opts.groupId !== undefined && gid !== opts.groupId) continue;
      const g = ix.groups.get(gid)!;
      const rs = g.resampled;
      if (opts.dropped !== undefined && rs?.groupDropped !== opts.dropped) continue;
      const keptIds = rs?.kept ?? [];
      const adv = groupAdvantages(keptIds.map((id) => rs!.rewards[id] ?? 0)).advantages;
      const advOf = new Map(keptIds.map((id, i) => [id, adv[i]]));
      const penOf = new Map((rs?.penalties ?? []).map((p) => [p.rolloutId, p]));
      const keptSet = new Set(keptIds);
      const members: GroupMemberRow[] = g.rolloutIds.map((id) => {
        const r = ix.rollouts.get(id)!;
        const reward = rs?.rewards[id] ?? r.reward?.reward ?? null;
        return {
          rolloutId: id,
          sampleIdx: r.sampleIdx,
          reward,
          pErr: penOf.get(id)?.pErr ?? null,
          pFormat: penOf.get(id)?.pFormat ?? null,
          status: !rs ? 'pending' : keptSet.has(id) ? 'kept' : 'dropped',
          advantage: advOf.get(id) ?? null,
        };
      });
      rows.push({
        groupId: gid,
        step: g.step,
        promptIdx: g.promptIdx,
        promptId: g.promptId,
        mode: rs?.mode ?? null,
        seed: rs?.seed ?? null,
        received: rs?.received ?? null,
        expected: rs?.expected ?? g.rolloutIds.map((id) => ix.rollouts.get(id)!.requested?.resample?.expected).find((x) => x !== undefined) ?? null,
        groupDropped: rs?.groupDropped ?? null,
        timeout: rs?.timeout ?? null,
        pending: !rs,
        kept: keptIds.length,
        positives: members.filter((m) => (m.reward ?? 0) > 0).length,
        members,
      });
    }
  }
  return rows;
}
