import { relative } from 'node:path';

/**
 * Seconds each long spec file took inside a full `.ci/run` on 2 cores (fresh clone of b1092bd, 2026-12-03,
 * the CI log's per-file times). Only the order of the run uses them: vitest knows durations only from its
 * cache, which a fresh CI machine does not have, and without it the two workers met the long files in file
 * size order, so one worker ran the last long file alone for minutes. Files not listed weigh 0. A stale
 * figure costs only some balance, never a result; re-measure when a file's cost changes by a lot.
 */
export const SUITE_WEIGHTS_S: Readonly<Record<string, number>> = {
  'test/e2e/train-hf-tiny.e2e.spec.ts': 541,
  'test/workers/trainer-worker.pytest.int.spec.ts': 467,
  'test/e2e/train-distributed.e2e.spec.ts': 383,
  'test/e2e/train-learning.e2e.spec.ts': 314,
  'services/tool-execution/src/compat-clients.int.spec.ts': 226,
  'test/e2e/chaos-kill-service.e2e.spec.ts': 161,
  'test/e2e/nats-cluster-failover.e2e.spec.ts': 142,
  'libs/sandbox/test/trajectory-replay.int.spec.ts': 141,
  'test/e2e/train-async.e2e.spec.ts': 120,
  'test/e2e/bus-archive.e2e.spec.ts': 107,
  'test/e2e/postgres-restart.e2e.spec.ts': 101,
  'test/e2e/replay-rerun-standalone.e2e.spec.ts': 87,
  'libs/sandbox/test/hostile-cases.int.spec.ts': 87,
  'test/e2e/fail-closed.e2e.spec.ts': 84,
  'test/e2e/db-roles.e2e.spec.ts': 74,
  'test/e2e/readme-recipe.e2e.spec.ts': 72,
  'libs/rollouts/src/rollouts-engines.e2e.spec.ts': 72,
  'test/architecture/module-boundaries.int.spec.ts': 71,
  'libs/step-driver/src/worker/trainer-sigkill.int.spec.ts': 63,
  'test/e2e/dashboard.e2e.spec.ts': 62,
  'libs/rollouts/src/partial-rollout.int.spec.ts': 60,
  'libs/cli/src/commands/exec.command.int.spec.ts': 59,
  'test/e2e/tamper-evidence.e2e.spec.ts': 48,
  'test/e2e/kafka-export.e2e.spec.ts': 45,
  'test/e2e/train-sft-reuse.e2e.spec.ts': 44,
  'test/e2e/observability.e2e.spec.ts': 44,
  'test/infra/service-image-layout.e2e.spec.ts': 40,
  'test/e2e/run-config-engines.e2e.spec.ts': 39,
  'libs/trackers/src/trackers.int.spec.ts': 38,
  'test/e2e/ablation-roc.e2e.spec.ts': 35,
  'test/e2e/train-standalone.e2e.spec.ts': 27,
};

/**
 * `files` with the ones of known weight ({@link SUITE_WEIGHTS_S}) first, heaviest first, the rest after them in
 * their given order. Longest-first is the classic list-scheduling rule (Graham, 1969: within 4/3 of the best
 * makespan): the last file to start is a short one, so no worker runs a long file alone at the end. `root`: the
 * repository root the weights' paths are relative to.
 */
export function heaviestFirst<T extends { moduleId: string }>(files: T[], root: string): T[] {
  const weight = (f: T) => SUITE_WEIGHTS_S[relative(root, f.moduleId).split('\\').join('/')] ?? 0;
  // Array.prototype.sort is stable, so equal weights (every unlisted file) keep vitest's order.
  return [...files].sort((a, b) => weight(b) - weight(a));
}
