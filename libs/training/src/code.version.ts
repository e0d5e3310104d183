import { execFileSync } from 'node:child_process';
import { REPO_ROOT } from '@rstar/step-driver';

/** What {@link codeVersion} says when `root` is not a git checkout (a tarball, an image without `.git`, no git installed). */
export const NOT_A_GIT_CHECKOUT = 'unknown (not a git checkout; set RSTAR_CODE_VERSION)';

const git = (root: string, args: string[]): string =>
  execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 30_000 }).trim();

/**
 * The code version a run records in `RunStarted` (and `rstar replay show` prints): env `RSTAR_CODE_VERSION`
 * when set (a CI job or a container image names its own build), else the commit the checkout at `root` is
 * at (`git rev-parse HEAD`, 40 hex digits) with `-dirty` appended when a tracked file differs from it
 * (`git status --porcelain --untracked-files=no`: untracked files are ignored, as `git describe --dirty`
 * does), else {@link NOT_A_GIT_CHECKOUT}. Runs git twice (a few ms); never throws.
 */
export function codeVersion(root: string = REPO_ROOT, env: NodeJS.ProcessEnv = process.env): string {
  if (env.RSTAR_CODE_VERSION) return env.RSTAR_CODE_VERSION;
  try {
    const commit = git(root, ['rev-parse', '--verify', 'HEAD']);
    if (!/^[0-9a-f]{40,64}$/.test(commit)) return NOT_A_GIT_CHECKOUT;
    const dirty = git(root, ['status', '--porcelain', '--untracked-files=no']) !== '';
    return dirty ? `${commit}-dirty` : commit;
  } catch {
    return NOT_A_GIT_CHECKOUT;
  }
}
