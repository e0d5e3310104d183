import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Keep only the `keepLast` newest step checkpoints (`step-<n>` folders, by step number) under `dir`;
 * the SFT checkpoint (`sft`) and anything else is left alone. Returns the folders removed.
 */
export function pruneCheckpoints(dir: string, keepLast: number): string[] {
  if (!existsSync(dir)) return [];
  const steps = readdirSync(dir)
    .map((e) => ({ e, n: /^step-(\d+)$/.exec(e) }))
    .filter((x): x is { e: string; n: RegExpExecArray } => x.n !== null)
    .sort((a, b) => Number(b.n[1]) - Number(a.n[1]));
  const removed = steps.slice(keepLast).map((x) => join(dir, x.e));
  for (const p of removed) rmSync(p, { recursive: true, force: true });
  return removed;
}
