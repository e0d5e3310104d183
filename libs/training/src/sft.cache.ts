import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig } from '@rstar/contracts';
import { REPO_ROOT, sftOptionsOf } from '@rstar/step-driver';

/** What the SFT stage produced, kept beside a cached checkpoint. */
export interface SftCacheEntry {
  key: string;
  codeVersion: string;
  steps: number;
  trainSeconds: number;
  finalLoss: number;
  createdAt: string;
}

/** Where SFT checkpoints are kept for reuse (git-ignored, like the runs). */
export const SFT_CACHE_DIR = join(REPO_ROOT, 'runs', '.sft-cache');

/** Source folders whose code decides an SFT checkpoint: the model and trainer, the trace format, the sandbox that runs the traces' tool calls. */
const SFT_SOURCES = ['libs/policy/src', 'libs/agent/src', 'libs/sandbox/src', 'libs/sandbox/python'];

function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).sort().flatMap((e) => {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) return e === '__pycache__' || e === 'node_modules' ? [] : files(p);
    return /\.(ts|py)$/.test(e) && !/\.spec\.ts$/.test(e) ? [p] : [];
  });
}

/**
 * The code version an SFT checkpoint is keyed by: RSTAR_CODE_VERSION when set, else the SHA-256 (first
 * 16 hex digits) of the SFT code's source files (libs/policy, libs/agent, libs/sandbox, in path order), or
 * null where the sources are not there (a service image without them): then nothing is reused.
 */
export function sftCodeVersion(root = REPO_ROOT): string | null {
  if (process.env.RSTAR_CODE_VERSION) return process.env.RSTAR_CODE_VERSION;
  const all = SFT_SOURCES.flatMap((d) => files(join(root, d)));
  if (all.length === 0) return null;
  const h = createHash('sha256');
  for (const f of all) h.update(f.slice(root.length)).update('\0').update(readFileSync(f)).update('\0');
  return h.digest('hex').slice(0, 16);
}

/**
 * The key of a run's SFT checkpoint: SHA-256 of every setting `runSft` reads (steps, batch size, learning
 * rate, warm-up, seed, model shape, data sizes, erring-trace share and kinds, tool limits of the traces'
 * calls) and the code version. Two runs with the same key train bit-identical SFT checkpoints.
 */
export function sftCacheKey(config: RunConfig, codeVersion: string): string {
  const o = sftOptionsOf(config, { outDir: '' });
  const inputs = {
    sft: { steps: o.steps, batchSize: o.batchSize, lr: o.lr, warmupSteps: o.warmupSteps, toolErrorRate: o.toolErrorRate, toolErrorKinds: o.toolErrorKinds ?? null },
    seed: o.seed,
    model: o.model,
    data: { trainSize: o.trainSize, heldOutSize: o.heldOutSize },
    tool: { timeoutMs: config.tool.timeoutMs, memoryMb: config.tool.memoryMb, outputChars: config.tool.outputChars },
    codeVersion,
  };
  return createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 24);
}

/** The cached entry of `key`, copied into `target` (a run's `checkpoints/sft`); null when none is cached. */
export function restoreSft(key: string, target: string, cacheDir = SFT_CACHE_DIR): SftCacheEntry | null {
  const dir = join(cacheDir, key);
  const manifest = join(dir, 'sft-cache.json');
  if (!existsSync(manifest)) return null;
  const entry = JSON.parse(readFileSync(manifest, 'utf8')) as SftCacheEntry;
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  cpSync(join(dir, 'checkpoint'), target, { recursive: true });
  return entry;
}

/** Keep a freshly trained SFT checkpoint under `key` (written to a temporary folder, then renamed: a reader never sees half of it). */
export function storeSft(entry: SftCacheEntry, source: string, cacheDir = SFT_CACHE_DIR): string {
  const dir = join(cacheDir, entry.key);
  if (existsSync(join(dir, 'sft-cache.json'))) return dir;
  const tmp = join(cacheDir, `.tmp-${entry.key}-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  cpSync(source, join(tmp, 'checkpoint'), { recursive: true });
  writeFileSync(join(tmp, 'sft-cache.json'), JSON.stringify(entry, null, 2) + '\n');
  try {
    renameSync(tmp, dir);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another run stored the same key first
  }
  return dir;
}
