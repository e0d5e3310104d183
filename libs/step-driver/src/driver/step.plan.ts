import type { RunConfig, StageConfig } from '@rstar/contracts';
import { rngFromSeed, sampleUniform, seedOf } from '@rstar/grpo';

/** Total RL steps of a run: the sum of its stages' steps. */
export function totalSteps(config: RunConfig): number {
  return config.stages.reduce((s, st) => s + st.steps, 0);
}

/** The stage a global step (0-based) belongs to. Throws RangeError past the last stage. */
export function stageOf(config: RunConfig, step: number): { stage: StageConfig; stageIndex: number; stepInStage: number } {
  let first = 0;
  for (let i = 0; i < config.stages.length; i++) {
    const st = config.stages[i];
    if (step < first + st.steps) return { stage: st, stageIndex: i, stepInStage: step - first };
    first += st.steps;
  }
  throw new RangeError(`step ${step} is past the last stage (the run has ${first} steps)`);
}

/**
 * The prompt indices of a step: `count` distinct indices drawn uniformly from the pool minus `exclude`
 * (stage 3's solved prompts), with a PRNG seeded by `seedOf(runSeed, step, 'prompts')`, so a resumed or
 * replayed run picks the same prompts. When fewer than `count` remain, all remaining are used; when
 * none remain, the exclusion is ignored.
 */
export function pickPrompts(o: { runSeed: number; step: number; poolSize: number; count: number; exclude?: ReadonlySet<number> }): number[] {
  const all = Array.from({ length: o.poolSize }, (_, i) => i);
  let candidates = o.exclude ? all.filter((i) => !o.exclude!.has(i)) : all;
  if (candidates.length === 0) candidates = all;
  return sampleUniform(rngFromSeed(seedOf(o.runSeed, o.step, 'prompts')), candidates, o.count);
}

/** The sampling seed of one rollout: 31 bits of `seedOf(runSeed, step, promptIdx, sampleIdx)`. */
export function samplingSeed(runSeed: number, step: number, promptIdx: number, sampleIdx: number): number {
  return parseInt(seedOf(runSeed, step, promptIdx, sampleIdx).slice(0, 8), 16) >>> 1;
}

/**
 * The run's staleness bound η (`async.maxStaleness`, docs/design/protocol.md §10): how many policy versions
 * a rollout may lag the trainer when its step trains. 0 (also when `async` is absent) = synchronous.
 */
export function maxStalenessOf(config: RunConfig): number {
  return config.async?.maxStaleness ?? 0;
}
