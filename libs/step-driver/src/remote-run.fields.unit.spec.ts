import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '@rstar/contracts';
import { loadRunConfig, presetNames } from './run-config.loader';
import { refuseRemoteIgnoredFields } from './remote-run.fields';
import { RunRefusedError } from './run.errors';

describe('refuseRemoteIgnoredFields: what the services would ignore is refused, naming the field', () => {
  it('every preset only the services run (validateOnly) names nothing they ignore', () => {
    const gpu = presetNames().filter((p) => loadRunConfig({ preset: p }).config.validateOnly);
    expect(gpu).toEqual(expect.arrayContaining(['qwen-7b-mi300x', 'rstar2-14b']));
    for (const p of gpu) expect(() => refuseRemoteIgnoredFields(loadRunConfig({ preset: p }).config), p).not.toThrow();
  });

  it('an eval section is refused naming eval and the fix', () => {
    const { config } = loadRunConfig({ preset: 'rstar2-14b' });
    const withEval = parseRunConfig({ ...config, policy: { ...config.policy, model: undefined }, eval: { samples: 4, temperature: 0.6 } });
    let err: unknown;
    try {
      refuseRemoteIgnoredFields(withEval);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RunRefusedError);
    expect((err as RunRefusedError).field).toBe('eval');
    expect((err as Error).message).toMatch(/remove the eval section/);
  });
});
