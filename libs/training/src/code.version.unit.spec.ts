import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { codeVersion, NOT_A_GIT_CHECKOUT } from './code.version';
import { REPO_ROOT } from '@rstar/step-driver';

const tmp = mkdtempSync(join(tmpdir(), 'rstar-code-version-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const git = (dir: string, ...args: string[]) =>
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', ...args], { encoding: 'utf8' }).trim();

describe('codeVersion (what RunStarted records)', () => {
  it('is the checkout\'s commit, marked -dirty while a tracked file differs from it (untracked files do not count)', () => {
    const repo = join(tmp, 'repo');
    execFileSync('git', ['init', '-q', repo]);
    writeFileSync(join(repo, 'a.txt'), 'one\n');
    git(repo, 'add', 'a.txt');
    git(repo, 'commit', '-q', '-m', 'first');
    const head = git(repo, 'rev-parse', 'HEAD');
    expect(head).toMatch(/^[0-9a-f]{40}$/);
    expect(codeVersion(repo, {})).toBe(head);
    writeFileSync(join(repo, 'untracked.txt'), 'x\n');
    expect(codeVersion(repo, {})).toBe(head);
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    expect(codeVersion(repo, {})).toBe(`${head}-dirty`);
    git(repo, 'commit', '-q', '-am', 'second');
    const next = git(repo, 'rev-parse', 'HEAD');
    expect(next).not.toBe(head);
    expect(codeVersion(repo, {})).toBe(next);
  });

  it('says clearly when the folder is not a git checkout, and RSTAR_CODE_VERSION wins over git', () => {
    const plain = join(tmp, 'plain');
    execFileSync('mkdir', ['-p', plain]);
    // GIT_CEILING_DIRECTORIES keeps git from finding a repository above the temp folder.
    const prev = process.env.GIT_CEILING_DIRECTORIES;
    process.env.GIT_CEILING_DIRECTORIES = tmp;
    try {
      expect(codeVersion(plain, {})).toBe(NOT_A_GIT_CHECKOUT);
    } finally {
      if (prev === undefined) delete process.env.GIT_CEILING_DIRECTORIES;
      else process.env.GIT_CEILING_DIRECTORIES = prev;
    }
    expect(codeVersion(plain, { RSTAR_CODE_VERSION: 'ci-1234' })).toBe('ci-1234');
  });

  it('of this repository is its HEAD commit (or the fallback, in a copy without .git)', () => {
    let head: string | null = null;
    try {
      head = git(REPO_ROOT, 'rev-parse', 'HEAD');
    } catch {
      // Not a git checkout (an unpacked archive).
    }
    const v = codeVersion(undefined, {});
    if (head) expect([head, `${head}-dirty`]).toContain(v);
    else expect(v).toBe(NOT_A_GIT_CHECKOUT);
  });
});
