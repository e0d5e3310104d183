import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JetStreamBus } from '@rstar/messaging';
import { generateApiToken, tokenDigest } from '@rstar/security';
import { freeLocalPort } from '@rstar/testing';
import { REPO_ROOT, ServiceProcess } from '../support/service-process';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const tag = `auth${process.pid}${Date.now().toString(36)}`;

/** One HTTP route of a service, as its controller declares it. */
interface Route {
  service: string;
  method: 'GET' | 'POST';
  path: string;
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') && !p.endsWith('.spec.ts') ? [p] : [];
  });
}

/**
 * Every route the services' controllers declare (`@Controller('prefix')` + `@Get/@Post/@Sse('path')`),
 * read from their sources, so a route added later is checked without editing this test.
 */
function declaredRoutes(): Route[] {
  const out: Route[] = [];
  for (const service of readdirSync(join(REPO_ROOT, 'services'))) {
    for (const f of files(join(REPO_ROOT, 'services', service, 'src'))) {
      const text = readFileSync(f, 'utf8');
      const ctrl = /@Controller\(\s*(?:'([^']*)')?\s*\)/.exec(text);
      if (!ctrl) continue;
      for (const m of text.matchAll(/@(Get|Post|Sse)\(\s*(?:'([^']*)')?\s*\)(?!\s*@PublicRoute\(\))/g)) {
        const path = ['', ctrl[1] ?? '', m[2] ?? ''].join('/').replace(/\/+/g, '/').replace(/\/$/, '').replace(/:[A-Za-z]+/g, 'x');
        out.push({ service, method: m[1] === 'Post' ? 'POST' : 'GET', path: path || '/' });
      }
    }
  }
  return out;
}

const SCOPES = ['read', 'execute', 'admin'] as const;

/**
 * Every service as a process with API tokens configured: each declared route answers 401 without a valid
 * token and 403 to a token without its scope, and only a token with the scope gets through; the probes
 * and metrics answer without a token. One token per scope, plus one that is not configured.
 */
describe('HTTP authentication on every service route', () => {
  const tokens = Object.fromEntries(SCOPES.map((s) => [s, generateApiToken()])) as Record<(typeof SCOPES)[number], string>;
  const services = new Map<string, ServiceProcess>();
  const routes = declaredRoutes();

  beforeAll(async () => {
    const apiTokens = SCOPES.map((s) => `${s} ${s === 'admin' ? tokenDigest(tokens[s]) : tokens[s]} only-${s}`).join('\n');
    const common = { RSTAR_API_TOKENS: apiTokens, RSTAR_NATS_URL: NATS_URL, RSTAR_STREAM: tag.toUpperCase(), RSTAR_SUBJECT_PREFIX: tag, RSTAR_DB_SCHEMA: tag, RSTAR_DATABASE_URL: PG_URL, HOST: '127.0.0.1' };
    const env: Record<string, Record<string, string>> = {
      'control-plane': {},
      optimization: { RSTAR_ENGINES: 'builtin=http://127.0.0.1:9', RSTAR_RUNS_DURABLE: `${tag}-runs` },
      'policy-serving': { RSTAR_ENGINES: 'builtin=http://127.0.0.1:9' },
      resampling: {},
      'reward-grading': {},
      'tool-execution': { RSTAR_SANDBOX_WORKERS: '1' },
    };
    await Promise.all(
      Object.entries(env).map(async ([service, extra]) => {
        const svc = new ServiceProcess({ name: service, entry: `services/${service}/src/main.ts`, port: await freeLocalPort(), waitFor: 'live', env: { ...common, ...extra }, startTimeoutMs: 180_000 });
        services.set(service, svc);
        await svc.start();
      }),
    );
  }, 300_000);
  afterAll(async () => {
    await Promise.all([...services.values()].map((s) => s.stop()));
    const bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag });
    await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
    await bus.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE; DROP SCHEMA IF EXISTS "${tag}_read" CASCADE`).catch(() => undefined);
    await c.end();
  }, 60_000);

  const call = (r: Route, token?: string) =>
    fetch(`http://127.0.0.1:${services.get(r.service)!.opts.port}${r.path}`, {
      method: r.method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: r.method === 'POST' ? JSON.stringify({ code: 'print(1)', requests: [{ code: 'print(1)' }] }) : undefined,
      signal: AbortSignal.timeout(60_000),
    });

  it('finds the routes of the services (the runs API, the execute routes, the engines view)', () => {
    const names = routes.map((r) => `${r.service} ${r.method} ${r.path}`);
    expect(names).toEqual(expect.arrayContaining([
      'control-plane GET /v1/runs',
      'control-plane GET /v1/runs/x/events',
      'control-plane GET /v1/archive',
      'tool-execution POST /v1/execute',
      'tool-execution POST /v1/execute/batch',
      'tool-execution GET /v1/sandbox',
      'policy-serving GET /v1/engines',
    ]));
  });

  it('answers 401 without a valid token and 403 without the scope on every route; only the scope gets through', async () => {
    const outcome: string[] = [];
    for (const r of routes) {
      const anon = await call(r);
      expect(anon.status, `${r.service} ${r.method} ${r.path} without a token`).toBe(401);
      expect(anon.headers.get('www-authenticate')).toMatch(/^Bearer realm="rstar", scope="(read|execute|admin)"/);
      expect((await call(r, generateApiToken())).status, `${r.path} with an unknown token`).toBe(401);
      const passed: string[] = [];
      for (const s of SCOPES) {
        const st = (await call(r, tokens[s])).status;
        if (st === 403) continue;
        expect(st, `${r.service} ${r.method} ${r.path} with a ${s} token`).not.toBe(401);
        passed.push(s);
      }
      expect(passed, `${r.service} ${r.method} ${r.path}: exactly one single-scope token gets through`).toHaveLength(1);
      outcome.push(`${r.method} ${r.path} ${passed[0]}`);
    }
    expect(outcome).toEqual(expect.arrayContaining(['GET /v1/runs read', 'POST /v1/execute execute', 'POST /v1/execute/batch execute', 'GET /v1/sandbox read', 'GET /v1/engines read']));
  });

  it('the dashboard signs in: POST /v1/session with a read token in the header sets the cookie, which GET routes take and POST routes do not', async () => {
    const base = `http://127.0.0.1:${services.get('control-plane')!.opts.port}`;
    const page = await fetch(`${base}/login`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("fetch('/v1/session'");
    expect((await fetch(`${base}/v1/session`, { method: 'POST', headers: { cookie: `rstar_token=${tokens.read}` } })).status).toBe(401);
    const session = await fetch(`${base}/v1/session`, { method: 'POST', headers: { authorization: `Bearer ${tokens.read}` } });
    expect(session.status).toBe(204);
    const cookie = session.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^rstar_token=[^;]+; Path=\/; HttpOnly; SameSite=Strict/);
    const jar = cookie.split(';')[0];
    expect((await fetch(`${base}/v1/runs`, { headers: { cookie: jar } })).status).toBe(200);
    const te = `http://127.0.0.1:${services.get('tool-execution')!.opts.port}`;
    expect((await fetch(`${te}/v1/execute`, { method: 'POST', headers: { cookie: `rstar_token=${tokens.execute}`, 'content-type': 'application/json' }, body: '{"code":"print(1)"}' })).status).toBe(401);
  });

  it('leaves /health/live, /health/ready and /metrics open on every service', async () => {
    for (const [name, svc] of services) {
      const base = `http://127.0.0.1:${svc.opts.port}`;
      expect((await fetch(`${base}/health/live`)).status, name).toBe(200);
      expect([200, 503], name).toContain((await fetch(`${base}/health/ready`)).status);
      expect((await fetch(`${base}/metrics`)).status, name).toBe(200);
    }
    expect(services.get('control-plane')!.output).not.toContain('HTTP AUTHENTICATION IS OFF');
  });
});
