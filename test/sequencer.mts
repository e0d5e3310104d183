import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { heaviestFirst } from './support/suite-order.mts';

const ROOT = resolve(import.meta.dirname, '..');
/** Where the warm-up process writes its output (one line when it is done, the error when it failed). */
const SFT_WARMUP_LOG = resolve(ROOT, '.rstar/sft-warmup.log');

/** True when the spec file's source calls ensureSftCheckpoint (test/support/sft-checkpoint.ts). */
function needsSftCheckpoint(spec: TestSpecification): boolean {
  try {
    return readFileSync(spec.moduleId, 'utf8').includes('ensureSftCheckpoint(');
  } catch {
    return false;
  }
}

let warmup: ChildProcess | null = null;

/** Starts test/support/sft-checkpoint.main.ts unless it is running; it exits at once when the checkpoint is cached. */
function startSftWarmup(): void {
  if (warmup) return;
  mkdirSync(resolve(ROOT, '.rstar'), { recursive: true });
  const log = openSync(SFT_WARMUP_LOG, 'w');
  // Its own process group, so that stopping it also stops the sandbox processes it started.
  warmup = spawn(process.execPath, ['--import', 'tsx', 'test/support/sft-checkpoint.main.ts'], { cwd: ROOT, stdio: ['ignore', log, log], detached: true });
  closeSync(log);
  const child = warmup;
  child.unref(); // never what keeps vitest from exiting
  // Watch mode sorts again on every rerun: a finished warm-up may be started again (it exits at once when cached).
  child.once('exit', () => {
    if (warmup === child) warmup = null;
  });
  // A run that ends (or is interrupted) before the checkpoint is trained stops it; its lock is then taken
  // over by the next caller (the lock names this pid, which is gone).
  process.once('exit', () => {
    if (child.exitCode !== null || child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
}

/**
 * Vitest's order (failed first, then longest first, by the cached results), the files of known weight
 * first ({@link heaviestFirst}: a fresh CI machine has no cache), except that the files which
 * need the shared tiny SFT checkpoint run after all the others, and a background process starts training
 * that checkpoint as soon as the run is planned. Before, the first such file trained it inside its own
 * `beforeAll` (~17 min on CI's loaded 2 cores) and a second one sat waiting on its lock, holding the other
 * worker: ~1,700 s of summed file time went to one training. Now the training overlaps the files that do
 * not need it, and its time is charged to no test file. A file whose checkpoint is not ready yet still
 * waits on the lock; if the warm-up failed, that file trains the checkpoint itself and reports the error.
 */
export class SftWarmupSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = heaviestFirst(await super.sort(files), ROOT);
    const late = sorted.filter(needsSftCheckpoint);
    if (late.length === 0) return sorted;
    startSftWarmup();
    return [...sorted.filter((f) => !late.includes(f)), ...late];
  }
}
