import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src';

/**
 * The zygote package's own tests (libs/sandbox/python/tests: cell running, exception display, status
 * classification, capture and cut rules, configuration), run with pytest from .venv-dev (made by
 * infra/local/setup.sh with the sandbox's interpreter), so `pnpm test` and CI run them too.
 */
const PYTHON = resolve(REPO_ROOT, '.venv-dev', 'bin', 'python');

describe('zygote pytest suite', () => {
  it('passes', () => {
    expect(existsSync(PYTHON), `${PYTHON} missing: run bash infra/local/setup.sh (it installs infra/python/requirements-dev.txt)`).toBe(true);
    const r = spawnSync(PYTHON, ['-m', 'pytest', 'libs/sandbox/python/tests', '-q', '-p', 'no:cacheprovider'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 300_000,
    });
    const tail = `${r.stdout}\n${r.stderr}`.slice(-3000);
    expect(r.status, tail).toBe(0);
    expect(r.stdout).toMatch(/\d+ passed/);
    expect(r.stdout).not.toMatch(/failed|error/);
  }, 320_000);
});
