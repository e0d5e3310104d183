import type { RecordedTrajectory } from './trajectory.replay';

const FROM_SUB = /\bfrom\s+scipy\.(\w+)/g;
const IMPORT_SUB = /\bimport\s+scipy\.(\w+)/g;
const ATTR = /\bscipy\.(\w+)/g;
const FROM_SCIPY = /\bfrom\s+scipy\s+import\s+\(?([\w\s,]+)\)?/g;

/**
 * Which scipy submodules real code uses: for each submodule, the number of code blocks that import it
 * (`from scipy.stats import norm`, `import scipy.integrate`, `from scipy import optimize`) or reach it as
 * `scipy.<name>`. Decides what the scipy zygotes warm (SCIPY_WARM_MODULES).
 * @returns block counts by submodule, most used first, and how many blocks mention scipy at all
 */
export function scipySubmoduleUsage(trajectories: RecordedTrajectory[]): { blocks: number; scipyBlocks: number; submodules: [string, number][] } {
  const counts = new Map<string, number>();
  let blocks = 0;
  let scipyBlocks = 0;
  for (const t of trajectories)
    for (const b of t.blocks) {
      blocks++;
      if (!/\bscipy\b/.test(b.code)) continue;
      scipyBlocks++;
      const mods = new Set<string>();
      for (const re of [FROM_SUB, IMPORT_SUB, ATTR]) for (const m of b.code.matchAll(re)) mods.add(m[1]!);
      for (const m of b.code.matchAll(FROM_SCIPY))
        for (const name of m[1]!.split(',')) if (name.trim()) mods.add(name.trim().split(/\s+/)[0]!);
      for (const m of mods) counts.set(m, (counts.get(m) ?? 0) + 1);
    }
  return { blocks, scipyBlocks, submodules: [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])) };
}
