import { groupTimeoutReason, type EventData } from '@rstar/contracts';
import { resampleGroup, rocPenalties, type GroupRollout, type ResampleMode, type RolloutCounters } from '@rstar/grpo';

/** How a group is resampled: from `RolloutRequested.resample`, else the resampler's defaults. */
export interface GroupPolicy {
  /** Rollouts expected in the group (2G). */
  expected: number;
  /** Rollouts to keep (G). */
  keep: number;
  mode: ResampleMode;
  runSeed: number;
  /** Seconds from the group's first event until it is recorded as timed out. */
  timeoutS: number;
}

/** A `GroupResampled` to publish, with the run it belongs to. */
export interface GroupDecision {
  runId: string;
  data: EventData<'GroupResampled'>;
}

interface GroupState {
  runId: string;
  groupId: string;
  step: number;
  promptId: string | null;
  policy: GroupPolicy | null;
  sampleIdx: Map<string, number>;
  counters: Map<string, RolloutCounters>;
  rewards: Map<string, number>;
  firstSeenMs: number;
  decision: GroupDecision | null;
}

/**
 * The resampler's pure core: collects each group's `RolloutRequested` (group policy, sample order),
 * `RolloutCompleted` (RoC counters) and `RewardAssigned` (reward), in any order and with duplicates,
 * and decides a group once every expected rollout has both its counters and its reward, or once its
 * timeout has passed. No I/O and no clock of its own: time comes in as arguments.
 *
 * Idempotence: a decided group keeps its decision until {@link markPublished}; later events of a
 * published group are ignored; a decision is a pure function of the collected facts, so a rebuild from
 * redelivered or archived events decides the same (modulo a timeout, which is recorded as such).
 */
export class GroupCollector {
  private readonly groups = new Map<string, GroupState>();
  private readonly published = new Set<string>();

  constructor(private readonly defaults: GroupPolicy | null = null) {}

  /** Feed `RolloutRequested`. */
  onRequested(runId: string, d: EventData<'RolloutRequested'>, nowMs: number): void {
    const g = this.state(runId, d.groupId, d.step, nowMs);
    if (!g) return;
    g.promptId = d.promptId;
    g.sampleIdx.set(d.rolloutId, d.sampleIdx);
    if (d.resample) g.policy = { ...d.resample };
  }

  /** Feed `RolloutCompleted` (only its RoC counters are kept). */
  onCompleted(runId: string, d: EventData<'RolloutCompleted'>, nowMs: number): void {
    const g = this.state(runId, d.groupId, d.step, nowMs);
    if (!g) return;
    g.promptId ??= d.promptId;
    g.counters.set(d.rolloutId, { toolCalls: d.toolCalls, toolErrors: d.toolErrors, answerBlocks: d.answerBlocks, turns: d.turns });
  }

  /** Feed `RewardAssigned`. */
  onReward(runId: string, d: EventData<'RewardAssigned'>, nowMs: number): void {
    const g = this.state(runId, d.groupId, d.step, nowMs);
    if (!g) return;
    g.rewards.set(d.rolloutId, d.reward);
  }

  /** A `GroupResampled` already on the log (rebuild, or another replica decided): forget the group. */
  onResampled(d: EventData<'GroupResampled'>): void {
    this.markPublished(d.groupId);
  }

  /** Mark a decision as published: its state is freed and later events of the group are ignored. */
  markPublished(groupId: string): void {
    this.published.add(groupId);
    this.groups.delete(groupId);
  }

  /** Every decided, not yet published group: complete groups and (when `nowMs` is given) timed-out ones. */
  decisions(nowMs?: number): GroupDecision[] {
    const out: GroupDecision[] = [];
    for (const g of this.groups.values()) {
      if (!g.decision) g.decision = this.decideComplete(g) ?? (nowMs === undefined ? null : this.decideTimeout(g, nowMs));
      if (g.decision) out.push(g.decision);
    }
    return out;
  }

  /** Groups collecting (not decided): for metrics and tests. */
  get open(): number {
    return [...this.groups.values()].filter((g) => !g.decision).length;
  }

  private state(runId: string, groupId: string, step: number, nowMs: number): GroupState | null {
    if (this.published.has(groupId)) return null;
    let g = this.groups.get(groupId);
    if (!g) {
      g = {
        runId, groupId, step, promptId: null, policy: null,
        sampleIdx: new Map(), counters: new Map(), rewards: new Map(), firstSeenMs: nowMs, decision: null,
      };
      this.groups.set(groupId, g);
    }
    return g;
  }

  private policyOf(g: GroupState): GroupPolicy | null {
    return g.policy ?? this.defaults;
  }

  /** Rollouts with both counters and reward, in sample order (id order when the index is unknown). */
  private ready(g: GroupState): GroupRollout[] {
    const ids = this.inSampleOrder(g, [...g.rewards.keys()].filter((id) => g.counters.has(id)));
    return ids.map((id) => ({ rolloutId: id, reward: g.rewards.get(id)!, ...g.counters.get(id)! }));
  }

  /** `ids` sorted by sample index (id order when the index is unknown or tied). */
  private inSampleOrder(g: GroupState, ids: string[]): string[] {
    const idx = (id: string) => g.sampleIdx.get(id) ?? Number(id.split(':').pop());
    return ids.sort((a, b) => idx(a) - idx(b) || (a < b ? -1 : a > b ? 1 : 0));
  }

  private decideComplete(g: GroupState): GroupDecision | null {
    const policy = this.policyOf(g);
    if (!policy) return null;
    const rollouts = this.ready(g);
    if (rollouts.length < policy.expected) return null;
    const r = resampleGroup({ groupId: g.groupId, rollouts, G: policy.keep, mode: policy.mode, runSeed: policy.runSeed, step: g.step });
    return {
      runId: g.runId,
      data: {
        groupId: g.groupId, step: g.step, promptId: g.promptId ?? '', mode: policy.mode, seed: r.seed,
        kept: r.kept, dropped: r.dropped, penalties: r.penalties,
        rewards: Object.fromEntries(rollouts.map((x) => [x.rolloutId, x.reward])),
        groupDropped: r.groupDropped, received: rollouts.length, expected: policy.expected,
      },
    };
  }

  private decideTimeout(g: GroupState, nowMs: number): GroupDecision | null {
    const policy = this.policyOf(g);
    const timeoutS = policy?.timeoutS ?? Infinity;
    if (nowMs - g.firstSeenMs < timeoutS * 1000) return null;
    const rollouts = this.ready(g);
    const seen = new Set([...g.sampleIdx.keys(), ...g.counters.keys(), ...g.rewards.keys()]);
    const expected = policy?.expected ?? Math.max(1, seen.size);
    const ready = new Set(rollouts.map((x) => x.rolloutId));
    const missing = this.inSampleOrder(g, [...seen].filter((id) => !ready.has(id)))
      .map((rolloutId) => ({ rolloutId, waitingFor: g.counters.has(rolloutId) ? ('reward' as const) : ('completion' as const) }));
    const facts = { budgetS: timeoutS, waitedS: Math.floor((nowMs - g.firstSeenMs) / 1000), expected, received: rollouts.length, missing, unseen: Math.max(0, expected - seen.size) };
    return {
      runId: g.runId,
      data: {
        groupId: g.groupId, step: g.step, promptId: g.promptId ?? '', mode: policy?.mode ?? 'weighted', seed: '',
        kept: [], dropped: [...seen].sort(),
        penalties: rollouts.map((x) => ({ rolloutId: x.rolloutId, ...rocPenalties(x) })),
        rewards: Object.fromEntries(rollouts.map((x) => [x.rolloutId, x.reward])),
        groupDropped: 'timeout', received: rollouts.length, expected,
        timeout: { budgetS: facts.budgetS, waitedS: facts.waitedS, missing, unseen: facts.unseen, reason: groupTimeoutReason(facts) },
      },
    };
  }
}
