import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/service-process';
import { dockerfileProblems, isPinnedImage, parseDockerfile, pipInstalls, stagesOf } from '../support/dockerfile.rules';

const DOCKER = join(REPO_ROOT, 'infra/docker');
const read = (f: string) => readFileSync(join(DOCKER, f), 'utf8');

/** hadolint from infra/local/install-infra-tools.sh (.tools/venv) or the PATH; null when absent. */
function hadolint(): string | null {
  const local = join(REPO_ROOT, '.tools/venv/bin/hadolint');
  if (existsSync(local)) return local;
  const r = spawnSync('hadolint', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? 'hadolint' : null;
}
const HADOLINT = hadolint();
// CI installs it (infra/local/setup.sh -> install-infra-tools.sh): there a missing hadolint is a failure.
const lintIt = HADOLINT || process.env.CI ? it : it.skip;
if (!HADOLINT && !process.env.CI) console.warn('dockerfiles: hadolint not installed — run `bash infra/local/install-infra-tools.sh`; the lint test is skipped');

describe('Dockerfiles', () => {
  lintIt('pass hadolint with no warning', () => {
    expect(HADOLINT, 'hadolint is not installed: run `bash infra/local/install-infra-tools.sh`').not.toBeNull();
    const files = ['service.Dockerfile', 'trainer.Dockerfile'].map((f) => join(DOCKER, f));
    const r = spawnSync(HADOLINT!, ['-f', 'json', ...files], { encoding: 'utf8' });
    const findings = JSON.parse(r.stdout || '[]') as Array<{ code: string; level: string; line: number; file: string; message: string }>;
    expect(findings.map((f) => `${f.file}:${f.line} ${f.code} ${f.level}: ${f.message}`)).toEqual([]);
    expect(r.status).toBe(0);
  });

  it('the services image: multi-stage, pinned bases, non-root, health check on /health/live, runs dist', () => {
    const text = read('service.Dockerfile');
    expect(dockerfileProblems(text, ['service', 'sandboxed-service'])).toEqual([]);
    const { stages } = stagesOf(parseDockerfile(text));
    for (const name of ['service', 'sandboxed-service']) {
      const s = stages.find((x) => x.name === name)!;
      const hc = s.instructions.find((i) => i.keyword === 'HEALTHCHECK')!;
      expect(hc.args).toContain('/health/live');
      expect(s.instructions.find((i) => i.keyword === 'ENTRYPOINT')!.args).toContain('dist/main.js');
    }
    // The build compiles with the repo's own build script (tsc, decorator metadata kept), never from source at run time.
    expect(text).toContain('node infra/build/build-service.mjs');
    expect(text).not.toMatch(/\btsx\b|swc-node/);
  });

  it("tool-execution's image carries bubblewrap and the sandbox's Python from infra/python/requirements.txt", () => {
    const text = read('service.Dockerfile');
    const s = stagesOf(parseDockerfile(text)).stages.find((x) => x.name === 'sandboxed-service')!;
    const body = s.instructions.map((i) => `${i.keyword} ${i.args}`).join('\n');
    expect(body).toMatch(/apt-get install[^\n]*\bbubblewrap=/);
    expect(body).toMatch(/RSTAR_PYTHON=\/opt\/rstar-python\/bin\/python/);
    expect(text).toContain('infra/python/requirements.txt');
    const build = read('build-images.sh');
    expect(build).toMatch(/tool-execution\|reward-grading\|optimization\) echo sandboxed-service/);
  });

  it('the trainer image: FROM a ROCm PyTorch base by default (CUDA by build arg), never torch from PyPI', () => {
    const text = read('trainer.Dockerfile');
    expect(dockerfileProblems(text, ['trainer']).filter((p) => !p.startsWith('not multi-stage'))).toEqual([]);
    const { globalArgs } = stagesOf(parseDockerfile(text));
    expect(globalArgs.BASE_IMAGE).toMatch(/^rocm\/pytorch:/);
    expect(isPinnedImage(globalArgs.BASE_IMAGE)).toBe(true);
    const cuda = /BASE_IMAGE=(\S+)/.exec(read('build-images.sh'))![1];
    expect(cuda).toMatch(/^pytorch\/pytorch:.*cuda/);
    expect(isPinnedImage(cuda)).toBe(true);
    // Every pip install is --no-deps (nothing can pull torch in as a dependency) and none names torch.
    const pips = pipInstalls(text);
    expect(pips.length).toBeGreaterThan(0);
    for (const p of pips) {
      expect(p, p).toContain('--no-deps');
      expect(p, p).not.toMatch(/\b(torch|torchvision|torchaudio|triton|nvidia-[\w-]+)\b(?!-)/);
    }
    const reqs = read('trainer-requirements.txt').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean);
    expect(reqs.length).toBeGreaterThan(5);
    for (const r of reqs) {
      expect(r, `${r} is pinned`).toMatch(/^[A-Za-z0-9_.-]+==\S+$/);
      expect(r).not.toMatch(/^(torch|triton|nvidia-|cuda-)/);
    }
    // The same versions as the worker's lock file.
    const lock = readFileSync(join(REPO_ROOT, 'workers/trainer/requirements.lock'), 'utf8');
    for (const r of reqs) expect(lock, `${r} matches workers/trainer/requirements.lock`).toMatch(new RegExp(`^${r.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'm'));
  });

  it('build-images.sh tags by version and refuses latest', () => {
    const r = spawnSync('bash', [join(DOCKER, 'build-images.sh')], { encoding: 'utf8', env: { ...process.env, RSTAR_IMAGE_VERSION: 'latest', PATH: process.env.PATH } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('refusing version "latest"');
    expect(read('build-images.sh')).not.toMatch(/:latest\b/);
    expect(execFileSync('bash', ['-n', join(DOCKER, 'build-images.sh')], { encoding: 'utf8' })).toBe('');
  });

  it('the rule checker catches what it must (a root image, no health check, latest, a bare base, one stage)', () => {
    const bad = ['ARG BASE=node', 'FROM ${BASE} AS service', 'RUN echo hi', 'ENTRYPOINT ["node"]'].join('\n');
    const problems = dockerfileProblems(bad, ['service']);
    expect(problems).toEqual(expect.arrayContaining([
      expect.stringContaining('not multi-stage'),
      expect.stringContaining('is not pinned'),
      expect.stringContaining('no USER'),
      expect.stringContaining('no HEALTHCHECK'),
    ]));
    expect(dockerfileProblems('FROM node:latest AS a\nFROM a AS service\nUSER 0\nHEALTHCHECK NONE\nCMD ["x"]', ['service'])).toEqual(
      expect.arrayContaining([expect.stringContaining('not pinned'), expect.stringContaining('last USER is 0'), expect.stringContaining('no HEALTHCHECK'), 'mentions a :latest tag']),
    );
    expect(isPinnedImage('rocm/pytorch:rocm7.0_ubuntu24.04_py3.12_pytorch_release_2.8.0')).toBe(true);
    expect(isPinnedImage('registry.local:5000/rstar/x')).toBe(false);
    expect(isPinnedImage('lmsysorg/sglang:latest-rocm630-mi30x')).toBe(false);
    expect(pipInstalls('FROM a\nRUN pip install torch && echo x')).toEqual(['pip install torch']);
  });
});
