import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { until } from '@rstar/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../../../..');

/**
 * The built-in engine in a process of its own, and a client whose event loop stalls past Node's default
 * keep-alive timeout (5 s) between two bursts of requests, as a loaded client process does. With the
 * default, the server closes the idle connections during the stall and the second burst fails with
 * "other side closed" / ECONNRESET (reproduced: 20 of 20 requests after a 6 s stall); the engine now
 * leaves closing idle connections to the client, so every request succeeds.
 */
describe('built-in engine: a client that stalls between requests never gets a connection reset', () => {
  let engine: ChildProcess;
  let url = '';
  beforeAll(async () => {
    const script = "require('./libs/engines/src').startBuiltinEngine({ port: 0, kvCapacityTokens: 4000 }).then((e) => console.log('URL ' + e.url))";
    engine = spawn(process.execPath, ['-r', '@swc-node/register', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    engine.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    url = await until(() => /URL (\S+)/.exec(out)?.[1], 'the engine to listen', { timeoutMs: 90_000 });
  }, 120_000);
  afterAll(() => {
    engine?.kill('SIGKILL');
  });

  it('answers a burst sent on connections that sat idle for 6 s while the client was stalled', async () => {
    const body = JSON.stringify({ input_ids: [1, 2, 3], sampling_params: { max_new_tokens: 2, temperature: 1 }, return_logprob: true });
    const burst = () => Promise.allSettled(Array.from({ length: 20 }, () => fetch(`${url}/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) => r.status)));
    expect((await burst()).every((r) => r.status === 'fulfilled' && r.value === 200)).toBe(true);
    // Stall this process' event loop (the client side) past the server's old 5 s idle timeout.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 6_000);
    const after = await burst();
    const failed = after.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason?.cause?.code ?? (r as PromiseRejectedResult).reason));
    expect(failed).toEqual([]);
  }, 60_000);
});
