import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runSft, type SftOptions } from '@rstar/policy';

const CACHE = resolve(__dirname, '../../.rstar/cache');
/** Bumped when runSft's traces change, so no cache keeps a checkpoint trained on the old ones (t3: the
 * traces show a seeded execution time, which makes a seed's checkpoint the same on every machine). */
const TRACE_FORMAT = 't3';

/**
 * Milliseconds a caller's `beforeAll` must allow for the checkpoint. Training it took 1,193 s on 2 cores at
 * load 11-20 under `nice -n 10` (2026-12-03, branch suite34; ~17 min inside CI's 2026-12-02 run), so a file
 * run alone on a cold cache at such a load needs more than the 15 min this was before.
 */
export const SFT_CHECKPOINT_TIMEOUT_MS = 1_500_000;

function ownerAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, 'owner'), 'utf8'));
  } catch {
    return true; // the owner is between mkdir and writing its pid
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SFT settings beyond the `tiny` preset's that a cached checkpoint may use (the tool-error share and kinds). */
export type SftCheckpointSettings = Pick<SftOptions, 'model' | 'batchSize' | 'lr' | 'warmupSteps' | 'trainSize' | 'toolErrorRate' | 'toolErrorKinds'>;
/** What {@link ensureSftCheckpoint} takes: steps (default 400), seed (default 7) and extra SFT settings. */
export type SftCheckpointOptions = { steps?: number; seed?: number } & SftCheckpointSettings;

/**
 * The cache directory of the checkpoint {@link ensureSftCheckpoint} returns for `opts` (it may not exist
 * yet): `.rstar/cache/sft-tiny-<trace format>-seed<seed>-steps<steps>[-<hash of the extra settings>]`.
 */
function sftCheckpointDir(opts: SftCheckpointOptions = {}): string {
  const { steps, seed, ...settings } = opts;
  // Every setting beyond steps and seed goes into the key (as a hash), so a changed setting never reuses a
  // stale checkpoint; without any, the key stays the one earlier callers used.
  const given = Object.entries(settings).filter(([, v]) => v !== undefined);
  const extra = given.length === 0 ? '' : `-${createHash('sha256').update(JSON.stringify(given.sort(([a], [b]) => a.localeCompare(b)))).digest('hex').slice(0, 12)}`;
  return join(CACHE, `sft-tiny-${TRACE_FORMAT}-seed${seed ?? 7}-steps${steps ?? 400}${extra}`);
}

/**
 * A tiny SFT checkpoint for tests that need a policy which already writes tool calls. Checkpoints are
 * produced by a command, never committed: the first caller trains one with `runSft` (the `tiny` preset's
 * 400 steps, seeded: every machine gets the same checkpoint) and later callers reuse it from
 * `.rstar/cache/`. A mkdir lock holding the owner's pid lets parallel test workers wait for the one that
 * trains, and take over when that worker died (a test file's process ends with its file). Call it from a
 * `beforeAll` with at least {@link SFT_CHECKPOINT_TIMEOUT_MS}. Extra `settings` (model, batch, lr, the
 * tool-error share and kinds) are passed to `runSft` and keyed into the cache directory name. In a `vitest`
 * run the default checkpoint is usually cached already, or being trained by the warm-up process that the
 * test sequencer starts (test/sequencer.mts): the caller then waits on that process's lock.
 *
 * @returns the checkpoint directory (model.json + weights.bin)
 */
export async function ensureSftCheckpoint(opts: SftCheckpointOptions = {}): Promise<string> {
  const { steps: s, seed: sd, ...settings } = opts;
  const steps = s ?? 400;
  const seed = sd ?? 7;
  const dir = sftCheckpointDir(opts);
  if (existsSync(join(dir, 'model.json'))) return dir;
  mkdirSync(CACHE, { recursive: true });
  const lock = `${dir}.lock`;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'owner'), String(process.pid));
      break;
    } catch {
      if (existsSync(join(dir, 'model.json'))) return dir;
      if (!ownerAlive(lock)) rmSync(lock, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (!existsSync(join(dir, 'model.json'))) {
      await runSft({ preset: 'tiny', steps, seed, trainSize: 2048, ...settings, heldOutSize: 8, outDir: dir });
    }
    return dir;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
