import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, PartialRolloutsUnsupportedError, parseRunConfig, parseRunConfigYaml } from './index';
import { closestKey, objectKeysAt } from './schema.suggest';
import { RunConfigSchema } from './run-config';

const stage = { name: 'rl', steps: 2, promptsPerStep: 2, groupSize: 4, maxResponseTokens: 64, lr: 0.001 };
const refused = (input: unknown): ConfigError => {
  try {
    parseRunConfig(input);
  } catch (e) {
    return e as ConfigError;
  }
  throw new Error('the config was accepted');
};

describe('run config errors name the field and the fix', () => {
  it('weight sync: disk by default with 512 MiB bf16 buckets; distributed is accepted for the trainer worker, refused by name where it cannot work', () => {
    const c = parseRunConfig({ name: 'x', stages: [stage] });
    expect([c.trainer.weightSync, c.trainer.weightSyncBucketMB, c.trainer.weightSyncDtype, c.trainer.probeTolerance]).toEqual(['disk', 512, 'bfloat16', undefined]);
    const hf = { name: 'x', stages: [stage], policy: { kind: 'hf', path: '/m' }, engines: [{ kind: 'sglang' }] };
    const d = parseRunConfig({ ...hf, trainer: { kind: 'worker', weightSync: 'distributed', weightSyncDtype: 'float32' } });
    expect([d.trainer.weightSync, d.trainer.weightSyncDtype]).toEqual(['distributed', 'float32']);
    const builtin = refused({ name: 'x', stages: [stage], trainer: { weightSync: 'distributed' } });
    expect(builtin.field).toBe('trainer.weightSync');
    expect(builtin.message).toContain('set trainer.weightSync: disk');
    const colocated = refused({ ...hf, engines: [{ kind: 'sglang', url: 'http://e:1', colocate: true }], trainer: { kind: 'worker', weightSync: 'distributed' } });
    expect(colocated.field).toBe('engines.0.colocate');
    expect(colocated.message).toContain('set trainer.weightSync: disk');
  });

  it('a misspelt key is named with the key probably meant, at any depth', () => {
    const e = refused({ name: 'x', stages: [{ ...stage, groupSize: undefined, groupSiz: 4 }], evall: {} });
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.message).toContain('stages.0: unknown key "groupSiz" (did you mean "groupSize"?)');
    expect(e.message).toContain('(root): unknown key "evall" (did you mean "eval"?)');
    expect(refused({ name: 'x', stages: [stage], tool: { timeoutMS: 10 } }).message).toContain('tool: unknown key "timeoutMS" (did you mean "timeoutMs"?)');
    // Nothing close: the accepted keys are listed instead of a guess.
    const far = refused({ name: 'x', stages: [stage], banana: 1 }).message;
    expect(far).toContain('(root): unknown key "banana"; accepted: name, seed, policy');
    expect(far).not.toContain('did you mean');
  });

  it('finds the object schema behind defaults, optionals and arrays', () => {
    expect(objectKeysAt(RunConfigSchema, ['stages', 3])).toContain('maxResponseTokens');
    expect(objectKeysAt(RunConfigSchema, ['eval'])).toEqual(['samples', 'temperature', 'maxTurns', 'maxResponseTokens']);
    expect(objectKeysAt(RunConfigSchema, ['stages', 0, 'lr'])).toEqual([]);
    expect(closestKey('maxResponseToken', ['maxTurns', 'maxResponseTokens'])).toBe('maxResponseTokens');
    expect(closestKey('lr', ['name', 'steps'])).toBeNull();
  });

  it("a response budget that leaves the built-in policy's context no room for a prompt is refused by validation", () => {
    const e = refused({ name: 'x', stages: [stage, { ...stage, name: 'rl-2', maxResponseTokens: 400 }] });
    expect(e.field).toBe('stages.1.maxResponseTokens');
    expect(e.message).toMatch(/stages\.1\.maxResponseTokens is 400, but policy\.model\.context is 160.*lower stages\.1\.maxResponseTokens or raise policy\.model\.context/);
    expect(refused({ name: 'x', stages: [stage], eval: { maxResponseTokens: 160 } }).field).toBe('eval.maxResponseTokens');
    expect(parseRunConfig({ name: 'x', policy: { model: { context: 512 } }, stages: [{ ...stage, maxResponseTokens: 400 }] }).stages[0].maxResponseTokens).toBe(400);
  });

  it('async.partialRollouts on an engine that cannot interrupt a turn (vllm) is refused naming the field and the engine', () => {
    const hf = { policy: { kind: 'hf', path: '/models/q' }, trainer: { kind: 'worker' } };
    const engines = [{ kind: 'sglang', url: 'http://a:30000' }, { kind: 'vllm', url: 'http://b:8000' }];
    const e = refused({ stages: [stage], ...hf, engines, async: { partialRollouts: true } });
    expect(e).toBeInstanceOf(PartialRolloutsUnsupportedError);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.field).toBe('async.partialRollouts');
    expect((e as PartialRolloutsUnsupportedError).engineKind).toBe('vllm');
    expect((e as PartialRolloutsUnsupportedError).engineIndex).toBe(1);
    expect(e.message).toMatch(/engines\.1 is kind "vllm".*set async\.partialRollouts to false/);
    // The same engines without partial rollouts, and partial rollouts on engines that can interrupt, pass.
    expect(parseRunConfig({ stages: [stage], ...hf, engines, async: { partialRollouts: false } }).async?.partialRollouts).toBe(false);
    const decoupledHf = { ...hf, trainer: { kind: 'worker', decoupled: true } };
    expect(parseRunConfig({ stages: [stage], ...decoupledHf, engines: [engines[0]], async: { partialRollouts: true } }).async?.partialRollouts).toBe(true);
    expect(parseRunConfig({ stages: [stage], trainer: { decoupled: true }, async: { partialRollouts: true } }).async?.partialRollouts).toBe(true);
    // Absent stays absent, so recorded configs keep their bytes.
    expect('async' in parseRunConfig({ stages: [stage] })).toBe(false);
  });

  it('async.partialRollouts without trainer.decoupled is refused naming trainer.decoupled and the fix, on either trainer', () => {
    const hf = { policy: { kind: 'hf', path: '/models/q' }, engines: [{ kind: 'sglang', url: 'http://a:30000' }] };
    for (const [cfg, trainer] of [
      [{}, {}],
      [{}, { decoupled: false }],
      [hf, { kind: 'worker' }],
      [hf, { kind: 'worker', tisCap: 2 }],
    ] as const) {
      const e = refused({ stages: [stage], ...cfg, trainer, async: { maxStaleness: 1, partialRollouts: true } });
      expect(e).toBeInstanceOf(ConfigError);
      expect(e.field).toBe('trainer.decoupled');
      expect(e.message).toMatch(/^async\.partialRollouts is true but trainer\.decoupled is not: .*set trainer\.decoupled: true, or set async\.partialRollouts to false$/);
    }
    // Async without partial rollouts needs no decoupled loss (each rollout is one version's); with it, decoupled passes.
    expect(parseRunConfig({ stages: [stage], async: { maxStaleness: 2 } }).trainer.decoupled).toBeUndefined();
    const c = parseRunConfig({ stages: [stage], trainer: { decoupled: true }, async: { maxStaleness: 1, partialRollouts: true } });
    expect([c.trainer.decoupled, c.async]).toEqual([true, { maxStaleness: 1, partialRollouts: true }]);
    // The engine check comes first: vLLM stays refused by engine whatever the trainer.
    const vllm = refused({ stages: [stage], policy: { kind: 'hf', path: '/m' }, trainer: { kind: 'worker', decoupled: true }, engines: [{ kind: 'vllm', url: 'http://b:8000' }], async: { partialRollouts: true } });
    expect(vllm).toBeInstanceOf(PartialRolloutsUnsupportedError);
  });

  it('a URI in a path field is refused naming the field and the fix (no code fetches s3:// or https://)', () => {
    for (const [field, cfg] of [
      ['policy.checkpoint', { policy: { kind: 'hf', init: 'checkpoint', checkpoint: 's3://bucket/ckpt' }, trainer: { kind: 'worker' }, engines: [{ kind: 'sglang', url: 'http://e:30000' }] }],
      ['data.heldOutPath', { data: { source: 'file', path: 'a.jsonl', heldOutPath: 'https://example.com/aime.jsonl' } }],
      ['policy.path', { policy: { kind: 'hf', path: 'gs://models/q' }, trainer: { kind: 'worker' }, engines: [{ kind: 'sglang', url: 'http://e:30000' }] }],
      ['data.path', { data: { source: 'file', path: 'file:///shared/a.jsonl' } }],
    ] as const) {
      const e = refused({ stages: [stage], ...cfg });
      expect(e.field).toBe(field);
      expect(e.message).toMatch(new RegExp(`^${field.replace('.', '\\.')} is the URI .*copy it to a volume the services mount`));
    }
    // Plain paths, absolute or relative, pass.
    expect(parseRunConfig({ stages: [stage], data: { source: 'file', path: '/shared/a.jsonl', heldOutPath: '../b.jsonl' } }).data.heldOutPath).toBe('../b.jsonl');
  });

  it('a field the mode ignores is refused: policy.model with a Hugging Face policy', () => {
    const e = refused({ stages: [stage], policy: { kind: 'hf', model: { layers: 40 } }, trainer: { kind: 'worker' }, engines: [{ kind: 'sglang', url: 'http://e:30000' }] });
    expect(e.field).toBe('policy.model');
    expect(e.message).toMatch(/config\.json; remove policy\.model/);
    // A parsed config (which carries the default policy.model) parses again, as replay re-reads RunStarted.
    const parsed = parseRunConfig({ stages: [stage], policy: { kind: 'hf' }, trainer: { kind: 'worker' }, engines: [{ kind: 'sglang', url: 'http://e:30000' }] });
    expect(parseRunConfig(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
  });

  it('engine entries a built-in run would ignore are refused naming them', () => {
    expect(refused({ stages: [stage], engines: [{ kind: 'builtin' }, { kind: 'builtin' }] }).field).toBe('engines.1');
    const e = refused({ stages: [stage], engines: [{ kind: 'builtin', url: 'http://127.0.0.1:30000' }] });
    expect(e.field).toBe('engines.0.url');
    expect(e.message).toMatch(/remove the url/);
    expect(parseRunConfig({ stages: [stage], engines: [{ kind: 'builtin', kvCapacityTokens: 4096 }] }).engines[0].kvCapacityTokens).toBe(4096);
  });

  it('every preset under configs/ validates', () => {
    const dir = resolve(__dirname, '../../../configs');
    const presets = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
    expect(presets.length).toBeGreaterThanOrEqual(7);
    for (const f of presets) expect(() => parseRunConfigYaml(readFileSync(resolve(dir, f), 'utf8'), `configs/${f}`), f).not.toThrow();
  });

  it('a YAML syntax error names the file', () => {
    expect(() => parseRunConfigYaml('name: x\nstages: [a\n', 'configs/mine.yaml')).toThrow(/^config configs\/mine\.yaml is not valid YAML: /);
  });

  it('checkpoints and colocation: counts >= 1, colocate only on sglang engines', () => {
    const hf = { stages: [stage], policy: { kind: 'hf' }, trainer: { kind: 'worker' } };
    const ok = parseRunConfig({ ...hf, engines: [{ kind: 'sglang', url: 'http://e:30000', colocate: true }], checkpoints: { every: 10, keepLast: 2, exportEvery: 100 } });
    expect(ok.checkpoints).toEqual({ every: 10, keepLast: 2, exportEvery: 100 });
    expect(ok.engines[0]!.colocate).toBe(true);
    expect(refused({ ...hf, engines: [{ kind: 'sglang', url: 'http://e:30000' }], checkpoints: { every: 0 } }).field).toBe('checkpoints.every');
    const e = refused({ ...hf, engines: [{ kind: 'sglang', url: 'http://e:30000' }, { kind: 'vllm', url: 'http://v:8000', colocate: true }] });
    expect(e.field).toBe('engines.1.colocate');
    expect(e.message).toMatch(/only sglang engines/);
  });
});

describe('async.maxStaleness is a whole number of policy versions >= 0', () => {
  it('negative, fractional or non-numeric: refused with a ConfigError naming async.maxStaleness and the fix', () => {
    for (const bad of [-1, 0.5, '1']) {
      const e = refused({ name: 'x', stages: [stage], async: { maxStaleness: bad } });
      expect(e).toBeInstanceOf(ConfigError);
      expect(e.code).toBe('invalid_config');
      expect(e.field).toBe('async.maxStaleness');
      expect(e.message).toContain('async.maxStaleness must be');
    }
  });
  it('absent: no async section (configs recorded without it stay byte-identical); present: defaults filled', () => {
    expect(parseRunConfig({ name: 'x', stages: [stage] }).async).toBeUndefined();
    expect(parseRunConfig({ name: 'x', stages: [stage], async: { maxStaleness: 2 } }).async).toEqual({ maxStaleness: 2, partialRollouts: false });
  });
});
