import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineResponseError } from './engine.errors';
import { requestJson } from './http.client';

/** A server answering each path's statuses in turn (the last one from then on), counting hits. */
const script: Record<string, number[]> = { '/408-once': [408, 200], '/404': [404], '/429-twice': [429, 429, 200] };
const hits: Record<string, number> = {};
const server = createServer((req, res) => {
  const path = req.url ?? '/';
  const n = (hits[path] = (hits[path] ?? 0) + 1);
  const statuses = script[path] ?? [500];
  const status = statuses[Math.min(n, statuses.length) - 1]!;
  req.resume();
  req.on('end', () => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(status === 200 ? JSON.stringify({ ok: true, n }) : '');
  });
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const retry = { attempts: 3, baseMs: 1, maxMs: 5, timeoutMs: 5000 };

describe('requestJson retries', () => {
  it('repeats a request the server timed out (408: nothing ran) and one it throttled (429)', async () => {
    expect(await requestJson('e', url, '/408-once', { body: { x: 1 } }, retry)).toEqual({ ok: true, n: 2 });
    expect(await requestJson('e', url, '/429-twice', { body: { x: 1 } }, retry)).toEqual({ ok: true, n: 3 });
  });

  it('does not repeat another 4xx: it is the caller\'s fault', async () => {
    await expect(requestJson('e', url, '/404', { body: {} }, retry)).rejects.toBeInstanceOf(EngineResponseError);
    expect(hits['/404']).toBe(1);
  });
});
