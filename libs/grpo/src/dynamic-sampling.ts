/**
 * Dynamic sampling (DAPO, Yu et al. 2025, arXiv 2503.14476 §3.2): how many extra groups a step asks for once
 * `allEqual` of its groups (its first ones and the extra ones already asked for) were dropped because every
 * reward was equal: one per such group, at most `cap` (= min(`roc.maxExtraGroups`, prompts left in the step's
 * seeded order)). The count depends only on how many groups were dropped, never on the order the decisions
 * arrived in. The step driver (libs/step-driver group.refill.ts) asks with it; `rstar replay verify`
 * re-derives each step's count with it.
 */
export function extraGroupsDue(allEqual: number, cap: number): number {
  return Math.max(0, Math.min(cap, allEqual));
}
