import { ids, type EventData } from '@rstar/contracts';
import { extraGroupsDue } from '@rstar/grpo';

type Resampled = EventData<'GroupResampled'>;

/** A group the refill asks for: its id, its index among the step's prompts and its prompt's index in the pool. */
export interface ExtraGroup {
  groupId: string;
  /** `base + j` for the j-th extra group: the group and rollout ids continue the step's prompt indices. */
  promptIdx: number;
  poolIdx: number;
}

/**
 * Dynamic sampling for one step (DAPO, Yu et al. 2025, arXiv 2503.14476 §3.2: over-sample and filter out the
 * prompts whose rollouts are all correct or all wrong until the batch is full of prompts with a learning
 * signal; verl implements it as `algorithm.filter_groups` over whole generation batches, bounded by
 * `max_num_gen_batches`). Here the unit is one group rather than a whole generation batch. The
 * step's first `base` groups are requested as before; each group GRPO-RoC drops as `all_equal` (original or
 * extra) asks for one extra group, drawn from the next prompts of the step's seeded prompt order
 * (`extraPoolIdx`: `pickPrompts` over `promptsPerStep + maxExtraGroups`, past the first `base`), until
 * `maxExtraGroups` have been asked for. A timed-out group is not replaced: it already used its whole budget.
 *
 * The extra groups asked for depend only on how many groups were dropped as all-equal, never on the order
 * the decisions arrive in: the j-th extra group is always prompt `base + j` with the j-th extra prompt, so
 * its group and rollout ids are deterministic and a resumed step re-asks for the same ones (the bus drops
 * the copies). With `maxExtraGroups` 0 it never asks for anything.
 */
export class GroupRefill {
  private asked = 0;
  private readonly cap: number;

  constructor(
    private readonly o: {
      runId: string;
      step: number;
      /** Groups requested at the step's start (its picked prompts). */
      base: number;
      /** Pool indices of the prompts that follow the step's picked ones in its seeded order. */
      extraPoolIdx: readonly number[];
      maxExtraGroups: number;
    },
  ) {
    this.cap = Math.min(o.maxExtraGroups, o.extraPoolIdx.length);
  }

  /** True when the run asks for extra groups at all (`roc.maxExtraGroups` > 0). */
  get enabled(): boolean {
    return this.o.maxExtraGroups > 0;
  }

  /**
   * The extra groups to request now, given every decided group of the run so far (`groups`, by group id;
   * only this step's are looked at: the first `base` and the extra ones already asked for). Each group is
   * returned once.
   */
  due(groups: ReadonlyMap<string, Resampled>): ExtraGroup[] {
    if (!this.enabled) return [];
    const out: ExtraGroup[] = [];
    // Asking may make more extra groups count; they are looked at once decided, on a later call.
    const allEqual = this.requestedIds().filter((g) => groups.get(g)?.groupDropped === 'all_equal').length;
    const due = extraGroupsDue(allEqual, this.cap);
    for (; this.asked < due; this.asked++) {
      const promptIdx = this.o.base + this.asked;
      out.push({ groupId: ids.group(this.o.runId, this.o.step, promptIdx), promptIdx, poolIdx: this.o.extraPoolIdx[this.asked] });
    }
    return out;
  }

  /** Every extra group asked for so far, in order. */
  extraIds(): string[] {
    return Array.from({ length: this.asked }, (_, j) => ids.group(this.o.runId, this.o.step, this.o.base + j));
  }

  /**
   * The step metrics of the refill (only when enabled, so a run without it records the metrics it always
   * did): `extraGroups` asked for, their cap, and `keptGroups` (groups that kept rollouts, extras included).
   */
  metrics(groups: readonly Resampled[]): Record<string, number> {
    if (!this.enabled) return {};
    return { extraGroups: this.asked, extraGroupsCap: this.cap, keptGroups: groups.filter((g) => g.kept.length > 0).length };
  }

  private requestedIds(): string[] {
    return [...Array.from({ length: this.o.base }, (_, i) => ids.group(this.o.runId, this.o.step, i)), ...this.extraIds()];
  }
}
