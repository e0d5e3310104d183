import 'reflect-metadata';
import { connect } from '@nats-io/transport-node';
import type { INestApplication } from '@nestjs/common';
import { makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { JetStreamBus } from '@rstar/messaging';
import { startService } from '@rstar/nest-runtime';
import { until } from '@rstar/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolExecutionModule } from './tool-execution.module';

const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const tag = `te${process.pid}${Date.now().toString(36)}`;
const SUBJECT = `rr${tag}.tool.execute`; // outside the stream's `<tag>.>` subjects, or JetStream would ack the request itself

let app: INestApplication;
let url: string;
let bus: JetStreamBus;

async function post(path: string, body: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json(), headers: r.headers };
}

beforeAll(async () => {
  // The service as `main.ts` builds it, on real NATS (a stream and subjects of its own) and a real sandbox.
  ({ app, url } = await startService(
    ToolExecutionModule.forRoot({
      PORT: '0', HOST: '127.0.0.1', RSTAR_NATS_URL: NATS_URL, RSTAR_STREAM: tag.toUpperCase(), RSTAR_SUBJECT_PREFIX: tag,
      RSTAR_SANDBOX_WORKERS: '2', RSTAR_SANDBOX_QUEUE_LIMIT: '8', RSTAR_SANDBOX_MAX_TIMEOUT_MS: '3000',
      RSTAR_TOOL_EXECUTE_SUBJECT: SUBJECT, RSTAR_TOOL_DURABLE: `tool-exec-${tag}`,
    }),
    'tool-execution',
  ));
  bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag });
  await until(async () => (await fetch(`${url}/health/ready`)).ok, 'tool-execution to be ready');
});

afterAll(async () => {
  await app?.close();
  if (bus) {
    await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
    await bus.close();
  }
});

describe('tool-execution service', () => {
  it('POST /v1/execute runs a program', async () => {
    const r = await post('/v1/execute', { code: 'import sympy as sp\nsp.factorint(360)' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ok', stdout: '{2: 3, 3: 2, 5: 1}\n', exitCode: 0, truncated: false });
  });

  it('rejects abusive limits with 400 naming the field; clamps huge ones', async () => {
    for (const [field, v] of [['timeoutMs', 0], ['timeoutMs', -1], ['memoryMb', 0], ['memoryMb', -1]] as const) {
      const r = await post('/v1/execute', { code: 'import time; time.sleep(3600)', [field]: v });
      expect(r.status).toBe(400);
      expect(r.body.message).toMatch(field);
    }
    const bad = await post('/v1/execute', { input: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe('code');
    const clamped = await post('/v1/execute', { code: 'import time; time.sleep(3600)', timeoutMs: 1e9 });
    expect(clamped.body.status).toBe('timeout');
    // Clamped to the 3 s maximum, not run for 1e9 ms (a loaded host may take seconds to kill the call).
    expect(clamped.body.wallMs).toBeLessThan(3000 + 4000);
  });

  it('POST /v1/execute/batch answers in order; invalid items get invalid_request', async () => {
    const r = await post('/v1/execute/batch', { requests: [{ code: 'print(1)' }, { code: 5 }, { code: 'print(3)' }] });
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: any) => x.status)).toEqual(['ok', 'invalid_request', 'ok']);
    expect(r.body.results[2].stdout).toBe('3\n');
    expect(r.body.results[1].stderr).toMatch(/code/);
  });

  it('answers overloaded (429 + Retry-After) past the admission queue, never crashes', async () => {
    const many = await Promise.all(Array.from({ length: 24 }, () => post('/v1/execute', { code: 'import time; time.sleep(0.3)' })));
    const statuses = many.map((r) => r.body.status);
    expect(statuses).toContain('overloaded');
    expect(statuses).toContain('ok');
    expect(statuses.every((s) => s === 'ok' || s === 'overloaded')).toBe(true);
    const o = many.find((r) => r.body.status === 'overloaded')!;
    expect(o.status).toBe(429);
    expect(o.headers.get('retry-after')).toBe('1');
    expect((await post('/v1/execute', { code: 'print(2)' })).body.stdout).toBe('2\n');
  });

  it('GET /v1/sandbox, /health/ready and /metrics report isolation, queue, sessions, latency and statuses', async () => {
    const h = await (await fetch(url + '/v1/sandbox')).json();
    expect(h).toMatchObject({ ok: true, isolation: 'bwrap', cgroup: 'v1', intMaxStrDigits: 0 });
    const ready = (await (await fetch(url + '/health/ready')).json()) as any;
    expect(ready).toMatchObject({ status: 'ok', info: { nats: { status: 'up' }, sandbox: { status: 'up' }, 'tool-calls': { status: 'up' } } });
    const m = await (await fetch(url + '/metrics')).text();
    expect(m).toMatch(/rstar_tool_exec_latency_seconds_bucket\{le="0.05",status="ok"\}/);
    expect(m).toMatch(/rstar_tool_exec_total\{status="overloaded"\} \d+/);
    expect(m).toMatch(/rstar_tool_exec_queue_depth \d+/);
    expect(m).toMatch(/rstar_tool_exec_active_sessions \d+/);
  });

  it('NATS request/reply on tool.execute with a queue group', async () => {
    const nc = await connect({ servers: NATS_URL });
    try {
      const reply = await nc.request(SUBJECT, JSON.stringify({ code: 'print(6*7)' }), { timeout: 10_000 });
      expect(JSON.parse(reply.string())).toMatchObject({ status: 'ok', stdout: '42\n' });
      const bad = await nc.request(SUBJECT, 'not json', { timeout: 10_000 });
      expect(JSON.parse(bad.string()).status).toBe('invalid_request');
    } finally {
      await nc.close();
    }
  });

  it('ToolCallRequested -> ToolCallCompleted, jupyter_code keeps state per rollout', async () => {
    const done = new Map<string, RstarEvent<'ToolCallCompleted'>>();
    const sub = await bus.subscribe({
      durable: `collector-${process.pid}`,
      types: ['ToolCallCompleted'],
      handler: async (ev) => {
        done.set(ev.data.callId, ev);
      },
    });
    const request = (callId: string, turn: number, code: string) =>
      makeEvent('ToolCallRequested', {
        runId: 'run-t',
        streamId: streams.rollout('ro-1'),
        key: callId,
        producer: 'test',
        data: { callId, rolloutId: 'ro-1', turn, tool: 'jupyter_code', code, limits: { timeoutMs: 3000, memoryMb: 256 } },
      });
    await bus.publish(request('c1', 0, 'k = 21'));
    await until(() => done.has('c1'), 'ToolCallCompleted of c1');
    await bus.publish(request('c2', 1, 'k * 2'));
    await until(() => done.has('c2'), 'ToolCallCompleted of c2');
    await sub.drain();
    expect(done.get('c1')?.data.status).toBe('ok');
    expect(done.get('c2')?.data).toMatchObject({ status: 'ok', stdout: '42\n', sessionReset: false, rolloutId: 'ro-1', turn: 1 });
    expect(done.get('c2')?.meta.causationId).toBe('ToolCallRequested:c2');
  });
});
