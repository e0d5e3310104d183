import { groupTimeoutReason } from '@rstar/contracts';
import { extraGroupsDue, rocPenalties } from '@rstar/grpo';
import type { Difference } from './difference';
import type { GroupRecord, RunIndex, StepRecord } from './run.index';

const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Re-derive a timed-out group's `GroupResampled` from its recorded inputs (docs/design/protocol.md §5): no
 * rollout kept; every reward it recorded equal to the rollout's `RewardAssigned`, every penalty equal to
 * `rocPenalties` of the rollout's counters; `received` the rollouts with a reward; `dropped` those plus the
 * ones it names as missing; `unseen` the rest of the expected; the budget the one its rollouts were requested
 * with; a wait no shorter than that budget; and the reason equal to `groupTimeoutReason` of those facts.
 * Returns the differences, or null when the group records no `timeout` (a run recorded before it: skipped).
 */
export function verifyTimeout(ix: RunIndex, g: GroupRecord): Difference[] | null {
  const rs = g.resampled;
  const t = rs?.timeout;
  if (!rs || !t) return null;
  const out: Difference[] = [];
  const diff = (field: string, recorded: unknown, recomputed: unknown, message: string, cause = 'resampler_changed', rolloutId?: string) =>
    out.push({ kind: 'group_timeout', deterministic: true, eventId: rs.eventId, field, step: g.step, groupId: g.groupId, rolloutId, recorded, recomputed, cause, message: `${rs.eventId}.${field}: ${message}` });
  const order = (ids: string[]) => ids.sort((a, b) => (ix.rollouts.get(a)?.sampleIdx ?? 0) - (ix.rollouts.get(b)?.sampleIdx ?? 0) || (a < b ? -1 : 1));
  const withReward = order(Object.keys(rs.rewards));
  if (rs.kept.length) diff('kept', rs.kept, [], 'a timed-out group keeps no rollout');
  for (const id of withReward) {
    const r = ix.rollouts.get(id);
    if (!r?.completed) {
      diff(`rewards.${id}`, rs.rewards[id], null, `rollout ${id} has a reward in the group but no RolloutCompleted in the log`, 'incomplete_log', id);
      continue;
    }
    if (r.reward && r.reward.reward !== rs.rewards[id]) diff(`rewards.${id}`, rs.rewards[id], r.reward.reward, `recorded ${rs.rewards[id]}, but ${r.reward.eventId}.reward is ${r.reward.reward}`, 'inconsistent_log', id);
    const p = rocPenalties(r.completed);
    const q = rs.penalties.find((x) => x.rolloutId === id);
    if (!q || !Object.is(q.pErr, p.pErr) || !Object.is(q.pFormat, p.pFormat)) {
      diff(`penalties.${id}`, q ?? null, p, `rollout ${id}: recorded ${q ? `${q.pErr}/${q.pFormat}` : 'none'}, today ${p.pErr}/${p.pFormat}`, 'resampler_changed', id);
    }
  }
  if (rs.received !== withReward.length) diff('received', rs.received, withReward.length, `${rs.received} recorded, ${withReward.length} rollouts have a reward`);
  const missing = t.missing.map((m) => m.rolloutId);
  const both = missing.filter((id) => id in rs.rewards);
  if (both.length) diff('timeout.missing', missing, missing.filter((id) => !both.includes(id)), `rollouts [${both.join(', ')}] are named missing but have a reward`);
  const dropped = [...new Set([...withReward, ...missing])].sort();
  if (!same(rs.dropped, dropped)) diff('dropped', rs.dropped, dropped, 'not the rollouts with a reward plus the missing ones');
  const unseen = Math.max(0, rs.expected - dropped.length);
  if (t.unseen !== unseen) diff('timeout.unseen', t.unseen, unseen, `${t.unseen} recorded, ${rs.expected} expected - ${dropped.length} seen = ${unseen}`);
  const requested = g.rolloutIds.map((id) => ix.rollouts.get(id)?.requested?.resample?.timeoutS).find((x) => x !== undefined);
  if (requested !== undefined && !Object.is(requested, t.budgetS)) diff('timeout.budgetS', t.budgetS, requested, `the group's rollouts were requested with a budget of ${requested} s`, 'inconsistent_log');
  if (t.waitedS < Math.floor(t.budgetS)) diff('timeout.waitedS', t.waitedS, t.budgetS, `decided after ${t.waitedS} s, before its budget of ${t.budgetS} s`);
  const reason = groupTimeoutReason({ budgetS: t.budgetS, waitedS: t.waitedS, expected: rs.expected, received: rs.received, missing: t.missing, unseen: t.unseen });
  if (t.reason !== reason) diff('timeout.reason', t.reason, reason, `recorded "${t.reason}", re-derived "${reason}"`);
  return out;
}

/**
 * Re-derive a step's dynamic sampling (docs/design/protocol.md §5): its extra groups (prompt indices past the
 * `StepStarted` prompts) must be the contiguous next indices, as many as `extraGroupsDue` gives for the step's
 * all-equal groups and its cap (`StepCompleted.metrics.extraGroupsCap`, at most the run's `roc.maxExtraGroups`),
 * and `metrics.extraGroups` must count them. Checked once every group of the step is decided; a run without
 * dynamic sampling and without extra groups has nothing to check.
 */
export function verifyRefill(ix: RunIndex, s: StepRecord): Difference[] {
  const base = s.started?.promptIds.length;
  if (base === undefined) return [];
  const roc = (ix.started?.config as { roc?: { maxExtraGroups?: number } } | undefined)?.roc;
  const maxExtra = roc?.maxExtraGroups ?? 0;
  const groups = s.groupIds.map((id) => ix.groups.get(id)!);
  const extras = groups.filter((g) => g.promptIdx >= base).map((g) => g.promptIdx).sort((a, b) => a - b);
  if (maxExtra === 0 && extras.length === 0) return [];
  if (groups.some((g) => !g.resampled)) return [];
  const out: Difference[] = [];
  const at = s.completed ?? s.started!;
  const diff = (field: string, recorded: unknown, recomputed: unknown, message: string) =>
    out.push({ kind: 'group_refill', deterministic: true, eventId: at.eventId, field, step: s.step, recorded, recomputed, cause: 'refill_changed', message: `${at.eventId}.${field}: ${message}` });
  const contiguous = extras.map((_, j) => base + j);
  if (!extras.every((p, j) => p === contiguous[j])) diff('extraGroups', extras, contiguous, `extra groups at prompt indices [${extras.join(', ')}], expected the next ones after ${base - 1}`);
  const metrics = s.completed?.metrics;
  const cap = metrics?.extraGroupsCap ?? maxExtra;
  if (cap > maxExtra) diff('metrics.extraGroupsCap', cap, maxExtra, `cap ${cap} above the run's roc.maxExtraGroups ${maxExtra}`);
  const allEqual = groups.filter((g) => g.resampled!.groupDropped === 'all_equal').length;
  const due = extraGroupsDue(allEqual, Math.min(cap, maxExtra));
  if (extras.length !== due) diff('extraGroups', extras.length, due, `${extras.length} extra groups requested; ${allEqual} groups dropped as all-equal with a cap of ${Math.min(cap, maxExtra)} ask for ${due}`);
  if (metrics && metrics.extraGroups !== undefined && metrics.extraGroups !== extras.length) diff('metrics.extraGroups', metrics.extraGroups, extras.length, `${metrics.extraGroups} recorded, ${extras.length} extra groups in the log`);
  return out;
}
