import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/service-process';

// build-images.sh against a stand-in `docker` on the PATH that records its arguments (there is no Docker
// engine here) and answers `inspect` with a digest: what the script builds, pushes and writes is real.
const dir = mkdtempSync(join(tmpdir(), 'rstar-build-images-'));
const log = join(dir, 'docker.log');
writeFileSync(join(dir, 'docker'), [
  '#!/usr/bin/env bash',
  `echo "$*" >> ${log}`,
  'if [ "$1" = inspect ]; then t="${@: -1}"; echo "${t%:*}@sha256:$(printf %s "$t" | sha256sum | cut -c1-64)"; fi',
  '',
].join('\n'));
chmodSync(join(dir, 'docker'), 0o755);
const run = (args: string[], env: Record<string, string> = {}) => {
  rmSync(log, { force: true });
  const r = spawnSync('bash', [join(REPO_ROOT, 'infra/docker/build-images.sh'), ...args], { encoding: 'utf8', env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, RSTAR_IMAGE_VERSION: '9.9.9', ...env } });
  let calls: string[] = [];
  try {
    calls = readFileSync(log, 'utf8').trim().split('\n');
  } catch {
    /* no docker call */
  }
  return { ...r, calls };
};
const tagsBuilt = (calls: string[]) => calls.filter((c) => c.startsWith('build ')).map((c) => /-t (\S+)/.exec(c)![1]);

describe('infra/docker/build-images.sh', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds only the requested target: the six services and that accelerator\'s trainer', () => {
    const services = ['control-plane', 'policy-serving', 'tool-execution', 'reward-grading', 'resampling', 'optimization'].map((s) => `reg/${s}:9.9.9`);
    expect(tagsBuilt(run(['reg', 'mi300x']).calls)).toEqual([...services, 'reg/trainer:9.9.9-rocm']);
    const nvidia = run(['reg', 'nvidia']);
    expect(tagsBuilt(nvidia.calls)).toEqual([...services, 'reg/trainer:9.9.9-cuda']);
    expect(nvidia.calls.at(-1)).toMatch(/ACCELERATOR=cuda.*BASE_IMAGE=pytorch\/pytorch:/);
    expect(tagsBuilt(run(['reg', 'local']).calls).at(-1)).toBe('reg/trainer:9.9.9-cuda');
    expect(tagsBuilt(run(['reg', 'all']).calls).slice(-2)).toEqual(['reg/trainer:9.9.9-rocm', 'reg/trainer:9.9.9-cuda']);
  });

  it('refuses a missing or unknown target before building anything, naming the choices', () => {
    for (const args of [['reg'], ['reg', 'h100']]) {
      const r = run(args);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/mi300x.*nvidia.*local.*all/);
      expect(r.calls).toEqual([]);
    }
  });

  it('with RSTAR_PUSH=1 pushes each image and writes its digest as a kustomize images list', () => {
    const out = join(dir, 'images.yaml');
    const r = run(['registry.example.com/rstar', 'mi300x'], { RSTAR_PUSH: '1', RSTAR_DIGESTS_OUT: out });
    expect(r.status, r.stderr).toBe(0);
    expect(r.calls.filter((c) => c.startsWith('push ')).length).toBe(7);
    const images = parse(readFileSync(out, 'utf8')).images as { name: string; newName: string; digest: string }[];
    expect(images.map((i) => i.name)).toEqual(['control-plane', 'policy-serving', 'tool-execution', 'reward-grading', 'resampling', 'optimization', 'trainer'].map((n) => `rstar/${n}`));
    for (const i of images) {
      expect(i.newName).toBe(`registry.example.com/rstar/${i.name.slice('rstar/'.length)}`);
      expect(i.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    }
  });
});
