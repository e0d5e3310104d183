import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createEngines } from './engine.factory';
import { EngineUnavailableError } from './engine.errors';
import { SglangAdapter } from './sglang.adapter';
import { VllmAdapter } from './vllm.adapter';

describe('createEngines', () => {
  it('parses kind=url specs, bare URLs as sglang, and ?id/?model/?kv options', () => {
    const [a, b, c] = createEngines(['builtin=http://127.0.0.1:1/', 'http://h:2', 'vllm=http://h:3?model=m&kv=1000&id=big']);
    expect(a).toBeInstanceOf(SglangAdapter);
    expect([a.id, a.kind]).toEqual(['builtin-0', 'builtin']);
    expect([b.id, b.kind]).toEqual(['sglang-1', 'sglang']);
    expect(c).toBeInstanceOf(VllmAdapter);
    expect(c.id).toBe('big');
  });

  it('rejects bad specs naming the fix', () => {
    expect(() => createEngines(['tgi=http://h:1'])).toThrow(/unknown kind "tgi"/);
    expect(() => createEngines(['sglang=not a url'])).toThrow(expect.objectContaining({ code: 'invalid_engine_spec' }));
    expect(() => createEngines(['vllm=http://h:1?kv=-5'])).toThrow(/kv must be a positive token count/);
    expect(() => createEngines(['sglang=http://h:1?colocate=yes'])).toThrow(/colocate must be 1 or 0/);
    expect(() => createEngines(['builtin=http://h:1?colocate=1'])).toThrow(/colocate needs an sglang engine/);
    expect(createEngines(['sglang=http://h:1?colocate=1'])[0]).toBeInstanceOf(SglangAdapter);
  });
});

describe('engine adapters on a dead address', () => {
  it('retries with backoff, then reports the engine unavailable (not a bad response)', async () => {
    // Reserve a free port and close it, so connections are refused.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const sg = new SglangAdapter('dead', `http://127.0.0.1:${port}`, { attempts: 3, baseMs: 5, maxMs: 20, timeoutMs: 2000 });
    const err = await sg.generate({ rid: 'r', inputIds: [1], sampling: { temperature: 1, topP: 1, seed: 0, maxNewTokens: 1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineUnavailableError);
    expect((err as Error).message).toMatch(/failed 3 times/);
    expect(await sg.health()).toBe(false);
  });
});
