import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { SECURITY_SETTINGS, startService } from '@rstar/nest-runtime';
import type { SandboxPool } from '@rstar/sandbox';
import { generateApiToken, type SecuritySettings } from '@rstar/security';
import type { ToolExecutionMetrics } from '@rstar/tool-calls';
import { until } from '@rstar/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecuteFastPath } from './execute.fast-path';
import { SANDBOX_POOL, TOOL_METRICS } from './tokens';
import { ToolExecutionModule } from './tool-execution.module';

const EXECUTE = generateApiToken();
const READ = generateApiToken();

let app: INestApplication;
let url: string;

function post(body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/execute`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

beforeAll(async () => {
  // HTTP only, with bearer tokens on: the fast path must leave every refusal to the guard.
  ({ app, url } = await startService(
    ToolExecutionModule.forRoot({
      PORT: '0', HOST: '127.0.0.1', RSTAR_NATS_URL: 'off', RSTAR_SANDBOX_WORKERS: '1',
      RSTAR_API_TOKENS: `execute ${EXECUTE} runner; read ${READ} viewer`,
    }),
    'tool-execution',
  ));
  await until(async () => (await fetch(`${url}/health/ready`)).ok, 'tool-execution to be ready');
});

afterAll(async () => {
  await app?.close();
});

describe('POST /v1/execute fast path', () => {
  it('answers an authorized, valid call itself, as the controller would (status, headers, body)', async () => {
    const r = await post('{"code":"print(6*7)"}', { authorization: `Bearer ${EXECUTE}` });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.headers.get('etag')).toBeNull();
    expect(r.headers.get('x-powered-by')).toBeNull();
    expect(await r.json()).toMatchObject({ status: 'ok', stdout: '42\n', exitCode: 0, truncated: false });

    // The middleware itself: it answers without handing the request on.
    const mw = new ExecuteFastPath(app.get<SandboxPool>(SANDBOX_POOL), app.get<ToolExecutionMetrics>(TOOL_METRICS), app.get<SecuritySettings>(SECURITY_SETTINGS));
    const headers: Record<string, string | number> = {};
    let sent = '';
    let handedOn = false;
    const res = { statusCode: 0, setHeader: (k: string, v: string | number) => (headers[k.toLowerCase()] = v), end: (b: string) => (sent = b) };
    await mw.use({ method: 'POST', headers: { authorization: `Bearer ${EXECUTE}` }, body: { code: 'print(1)' } }, res, () => (handedOn = true));
    expect(handedOn).toBe(false);
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(sent)).toMatchObject({ status: 'ok', stdout: '1\n' });
    expect(headers['content-length']).toBe(Buffer.byteLength(sent));
    // Anything but an authorized valid call is handed on to the route untouched.
    for (const req of [
      { method: 'POST', headers: {}, body: { code: 'print(1)' } },
      { method: 'POST', headers: { authorization: `Bearer ${READ}` }, body: { code: 'print(1)' } },
      { method: 'POST', headers: { authorization: `Bearer ${EXECUTE}` }, body: { code: 5 } },
    ]) {
      handedOn = false;
      sent = '';
      await mw.use(req, res, () => (handedOn = true));
      expect(handedOn, JSON.stringify(req)).toBe(true);
      expect(sent).toBe('');
    }
  });

  it('leaves refusals to the guard: 401 with WWW-Authenticate, 403 without the scope, 401 for a cookie on a POST', async () => {
    const anon = await post('{"code":"print(1)"}');
    expect(anon.status).toBe(401);
    expect(anon.headers.get('www-authenticate')).toBe('Bearer realm="rstar", scope="execute"');
    const unknown = await post('{"code":"print(1)"}', { authorization: `Bearer ${generateApiToken()}` });
    expect(unknown.status).toBe(401);
    const reader = await post('{"code":"print(1)"}', { authorization: `Bearer ${READ}` });
    expect(reader.status).toBe(403);
    expect(((await reader.json()) as { message: string }).message).toMatch(/lacks scope "execute"/);
    expect((await post('{"code":"print(1)"}', { cookie: `rstar_token=${EXECUTE}` })).status).toBe(401);
  });

  it('leaves invalid bodies to the controller and the body parsers: 400 naming the field, invalid JSON', async () => {
    const auth = { authorization: `Bearer ${EXECUTE}` };
    const noCode = await post('{"input":"x"}', auth);
    expect(noCode.status).toBe(400);
    expect(await noCode.json()).toMatchObject({ status: 'invalid_request', field: 'code' });
    const badLimit = await post('{"code":"print(1)","timeoutMs":0}', auth);
    expect(badLimit.status).toBe(400);
    expect(((await badLimit.json()) as { message: string }).message).toMatch(/timeoutMs/);
    const notJson = await post('{"code":', auth);
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ status: 'invalid_request', field: 'body' });
  });
});
