import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PolicyModel } from '@rstar/policy';
import { ApiTokenSet, generateApiToken, tokenDigest } from '@rstar/security';
import { EngineResponseError } from '../engine.errors';
import { createEngines } from '../engine.factory';
import { DEFAULT_RETRY } from '../http.client';
import { ENGINE_ROUTE_SCOPES } from './engine-route.scopes';
import { startBuiltinEngine, type BuiltinEngine } from './builtin-engine.server';

const CFG = { layers: 1, dModel: 16, heads: 2, context: 64, ffMult: 2 };

describe('built-in engine with bearer tokens: admin routes need admin, health and metrics stay open', () => {
  let eng: BuiltinEngine;
  const tmp = mkdtempSync(join(tmpdir(), 'rstar-engine-auth-'));
  const client = generateApiToken();
  const reader = generateApiToken();

  beforeAll(async () => {
    const apiTokens = ApiTokenSet.parse(`read,execute,admin ${tokenDigest(client)} engine-client\nread ${reader} dashboard`);
    eng = await startBuiltinEngine({ port: 0, modelConfig: CFG, kvCapacityTokens: 100, seed: 1, batchWindowMs: 2, apiTokens });
  });
  afterAll(async () => {
    await eng?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  const call = (route: string, token?: string) => {
    const [method, path] = route.split(' ');
    const body = method === 'POST' ? JSON.stringify(path === '/abort_request' ? { abort_all: true } : path === '/update_weights_from_disk' ? { model_path: join(tmp, 'none') } : { input_ids: [1, 2], sampling_params: { max_new_tokens: 1 } }) : undefined;
    return fetch(`${eng.url}${path}`, { method, body, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  };

  it('answers 401 without a valid token and 403 without the scope on every protected route; health and metrics stay open', async () => {
    for (const [route, scope] of Object.entries(ENGINE_ROUTE_SCOPES)) {
      const anon = await call(route);
      const wrong = await call(route, generateApiToken());
      const read = await call(route, reader);
      const full = await call(route, client);
      if (scope === 'public') {
        expect(anon.status, route).toBe(200);
        continue;
      }
      expect(anon.status, route).toBe(401);
      expect(anon.headers.get('www-authenticate'), route).toContain('Bearer');
      expect(wrong.status, route).toBe(401);
      expect(read.status, route).toBe(scope === 'read' ? 200 : 403);
      expect([401, 403], `${route} with the engine client's token`).not.toContain(full.status);
    }
    expect((await fetch(`${eng.url}/no/such/route`)).status).toBe(401);
  });

  it('the adapters send the engine token: info, generation, weight reload and cache flush work; without it the engine refuses', async () => {
    const [withKey] = createEngines([`builtin=${eng.url}`], DEFAULT_RETRY, { apiKey: client });
    expect((await withKey.serverInfo()).kvCapacityTokens).toBe(100);
    expect(await withKey.health()).toBe(true);
    const other = await PolicyModel.create(CFG, 7);
    const dir = join(tmp, 'ck');
    other.save(dir);
    other.dispose();
    await withKey.updateWeights(dir);
    await withKey.flushCache();
    const [without] = createEngines([`builtin=${eng.url}`]);
    await expect(without.updateWeights(dir)).rejects.toBeInstanceOf(EngineResponseError);
    await expect(without.updateWeights(dir)).rejects.toThrow(/HTTP 401/);
  });
});
