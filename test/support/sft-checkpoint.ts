import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runSft } from '@rstar/policy';

const CACHE = resolve(__dirname, '../../.rstar/cache');

/**
 * A tiny SFT checkpoint for tests that need a policy which already writes tool calls. Checkpoints are
 * produced by a command, never committed: the first caller trains one with `runSft` (seeded, so every
 * machine gets the same data order and init) and later callers reuse it from `.rstar/cache/`. A mkdir
 * lock lets parallel test workers wait for the one that trains.
 *
 * @returns the checkpoint directory (model.json + weights.bin)
 */
export async function ensureSftCheckpoint(opts: { steps?: number; seed?: number } = {}): Promise<string> {
  const steps = opts.steps ?? 400;
  const seed = opts.seed ?? 7;
  const dir = join(CACHE, `sft-tiny-seed${seed}-steps${steps}`);
  if (existsSync(join(dir, 'model.json'))) return dir;
  mkdirSync(CACHE, { recursive: true });
  const lock = `${dir}.lock`;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (existsSync(join(dir, 'model.json'))) return dir;
      // A lock older than 20 minutes belongs to a worker that died: take it over.
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > 20 * 60_000) rmSync(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (!existsSync(join(dir, 'model.json'))) {
      await runSft({ preset: 'tiny', steps, seed, trainSize: 2048, heldOutSize: 8, outDir: dir });
    }
    return dir;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
