import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseRunConfigYaml, type RunConfig, RstarError } from '@rstar/contracts';

/**
 * The repository root, which relative data paths of a run config and the presets are resolved against: the
 * nearest folder above this lib holding `pnpm-workspace.yaml` (also from a build under dist/), else (a
 * service image without the workspace) the nearest one holding the `configs/` the build copied.
 */
export const REPO_ROOT = findUp(__dirname, 'pnpm-workspace.yaml') ?? findUp(__dirname, 'configs') ?? resolve(__dirname, '../../..');

function findUp(from: string, entry: string): string | null {
  for (let d = from; ; d = dirname(d)) {
    if (existsSync(join(d, entry))) return d;
    if (dirname(d) === d) return null;
  }
}
/** Where the presets live: `configs/<name>.yaml`. */
export const PRESET_DIR = join(REPO_ROOT, 'configs');

/** A preset or config file that cannot be found; the message lists what exists. */
export class ConfigNotFoundError extends RstarError {
  declare readonly field: 'preset' | 'config';
  constructor(message: string, field: 'preset' | 'config') {
    super('config_not_found', message, field);
  }
}

/** Names of the presets under `configs/`. */
export function presetNames(dir = PRESET_DIR): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -5)).sort() : [];
}

/**
 * Each preset with the first sentence of the comment at the top of its YAML (the preset's own
 * description), for `rstar train --help`.
 */
export function presetSummaries(dir = PRESET_DIR): Array<{ name: string; summary: string }> {
  return presetNames(dir).map((name) => {
    const head: string[] = [];
    for (const line of readFileSync(join(dir, `${name}.yaml`), 'utf8').split('\n')) {
      if (!line.startsWith('#')) break;
      head.push(line.replace(/^#\s?/, ''));
    }
    const text = head.join(' ').replace(/\s+/g, ' ').trim();
    // The first sentence: up to a full stop followed by a capital (so "e.g." and "(issue 7;" do not end it).
    const end = text.search(/(?<!\be\.g|\bi\.e)\.(\s+[A-Z]|$)/);
    const first = end >= 0 ? text.slice(0, end + 1) : text;
    return { name, summary: first.length > 140 ? `${first.slice(0, 139)}…` : first || '(no description)' };
  });
}

/**
 * Load and validate a run config: `file` (a YAML path) wins over `preset` (a name under `configs/`,
 * default `tiny`). @throws ConfigNotFoundError; ConfigError (from @rstar/contracts) naming the bad field.
 */
export function loadRunConfig(opts: { preset?: string; file?: string; presetDir?: string } = {}): { config: RunConfig; source: string } {
  const dir = opts.presetDir ?? PRESET_DIR;
  let path: string;
  if (opts.file) {
    path = resolve(opts.file);
    if (!existsSync(path)) throw new ConfigNotFoundError(`config file ${path} does not exist (--config takes a YAML run config)`, 'config');
  } else {
    const name = opts.preset ?? 'tiny';
    path = join(dir, `${name}.yaml`);
    if (!existsSync(path)) throw new ConfigNotFoundError(`unknown preset "${name}" (known: ${presetNames(dir).join(', ')}; or pass --config FILE)`, 'preset');
  }
  return { config: parseRunConfigYaml(readFileSync(path, 'utf8'), path), source: path };
}

/** Resolve a data path of a config: relative paths are relative to the repository root. */
export function resolveDataPath(p: string): string {
  return resolve(REPO_ROOT, p);
}
