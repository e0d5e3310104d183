import { describe, expect, it } from 'vitest';
import { RunEngineUrlMissingError } from './engine.errors';
import { createEngines } from './engine.factory';
import { runEngineSpecs } from './run-engines';

describe('runEngineSpecs: the run config names the engines, RSTAR_ENGINES fills what it leaves out', () => {
  const env = ['sglang=http://engine-0.engine:30000', 'vllm=http://engine-1.engine:8000?model=m'];

  it('takes the config URLs, kinds and KV budgets over the service list', () => {
    expect(runEngineSpecs([{ kind: 'sglang', url: 'http://a:30000/', kvCapacityTokens: 9000 }], env)).toEqual(['sglang=http://a:30000?kv=9000']);
  });

  it('fills a URL the config leaves out from the entry at the same index, keeping its parameters', () => {
    expect(runEngineSpecs([{ kind: 'sglang', url: 'http://a:30000', kvCapacityTokens: null }, { kind: 'vllm', url: null, kvCapacityTokens: 500 }], env))
      .toEqual(['sglang=http://a:30000', 'vllm=http://engine-1.engine:8000?model=m&kv=500']);
  });

  it("a built-in run's one URL-less entry is every engine of the list, with its KV budget", () => {
    expect(runEngineSpecs([{ kind: 'builtin', url: null, kvCapacityTokens: null }], ['builtin=http://127.0.0.1:1', 'builtin=http://127.0.0.1:2'])).toEqual(['builtin=http://127.0.0.1:1', 'builtin=http://127.0.0.1:2']);
    expect(runEngineSpecs([{ kind: 'builtin', url: null, kvCapacityTokens: 640 }], ['builtin=http://127.0.0.1:1'])).toEqual(['builtin=http://127.0.0.1:1?kv=640']);
  });

  it('names engines.<i>.url when neither gives one', () => {
    const err = (() => {
      try {
        runEngineSpecs([{ kind: 'sglang', url: 'http://a:1', kvCapacityTokens: null }, { kind: 'sglang', url: null, kvCapacityTokens: null }], ['sglang=http://x:1']);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(RunEngineUrlMissingError);
    expect((err as RunEngineUrlMissingError).field).toBe('engines.1.url');
    expect((err as Error).message).toMatch(/give engines\.1\.url in the run config/);
  });

  it('the specs build adapters whose KV capacity is the config budget (sglang too)', async () => {
    const [a] = createEngines(runEngineSpecs([{ kind: 'vllm', url: 'http://127.0.0.1:9', kvCapacityTokens: 1234 }], []));
    expect(a.kind).toBe('vllm');
    expect((await a.serverInfo()).kvCapacityTokens).toBe(1234);
  });
});
