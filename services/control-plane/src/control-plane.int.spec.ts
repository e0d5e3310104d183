import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent } from '@rstar/contracts';
import { JetStreamBus } from '@rstar/messaging';
import { startService } from '@rstar/nest-runtime';
import { until } from '@rstar/testing';
import { ControlPlaneModule } from './control-plane.module';

const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const tag = `cp${process.pid}${Date.now().toString(36)}`;

describe('control-plane: archiver and runs API over real NATS and Postgres', () => {
  let app: INestApplication;
  let url: string;
  let bus: JetStreamBus;
  beforeAll(async () => {
    ({ app, url } = await startService(
      ControlPlaneModule.forRoot({ PORT: '0', HOST: '127.0.0.1', RSTAR_NATS_URL: NATS_URL, RSTAR_STREAM: tag.toUpperCase(), RSTAR_SUBJECT_PREFIX: tag, RSTAR_DATABASE_URL: PG_URL, RSTAR_DB_SCHEMA: tag, RSTAR_UI_DIR: mkdtempSync(join(tmpdir(), 'rstar-no-ui-')), RSTAR_LIVE_POLL_MS: '100' }),
      'control-plane',
    ));
    await until(async () => (await fetch(`${url}/health/ready`)).ok, 'control-plane to be ready');
    bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag });
    const run = 'run-api';
    await bus.publish([
      makeEvent('RunStarted', { runId: run, streamId: `run-${run}`, key: run, producer: 't', data: { config: {}, seed: 1, codeVersion: 'x', mode: 'distributed' } }),
      ...Array.from({ length: 25 }, (_, i) =>
        makeEvent('StepCompleted', { runId: run, streamId: `run-${run}`, key: `${run}:${i}`, producer: 't', data: { step: i, stage: 's', metrics: { reward: i } } }),
      ),
      makeEvent('RunCompleted', { runId: run, streamId: `run-${run}`, key: run, producer: 't', data: { steps: 25, summary: {} } }),
    ]);
    await until(async () => ((await (await fetch(`${url}/v1/archive`)).json()) as { events: number }).events === 27, 'the 27 events to be archived');
    await until(async () => ((await (await fetch(`${url}/v1/projections`)).json()) as any).readModels?.events === 27, 'the projector to apply the 27 events');
  });
  afterAll(async () => {
    await app?.close();
    if (bus) {
      await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
      await bus.close();
    }
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE; DROP SCHEMA IF EXISTS "${tag}_read" CASCADE`);
    await c.end();
  });

  it("lists runs and pages a run's events with a cursor and a type filter", async () => {
    const runs = (await (await fetch(`${url}/v1/runs`)).json()) as any;
    expect(runs.runs).toEqual([expect.objectContaining({ runId: 'run-api', events: 27, status: 'completed' })]);
    const ids: string[] = [];
    let after = '';
    for (;;) {
      const r = await fetch(`${url}/v1/runs/run-api/events?type=StepCompleted&limit=10${after ? `&after=${after}` : ''}`);
      expect(r.status).toBe(200);
      const page = (await r.json()) as any;
      if (!page.events.length) break;
      ids.push(...page.events.map((e: { id: string }) => e.id));
      after = page.next;
    }
    expect(ids).toHaveLength(25);
    expect(ids[0]).toBe('StepCompleted:run-api:0');
  });

  it('serves a run, its steps and the projection status from the read models', async () => {
    const run = (await (await fetch(`${url}/v1/runs/run-api`)).json()) as any;
    expect(run.summary).toMatchObject({ runId: 'run-api', status: 'completed', mode: 'distributed', seed: 1, stepsCompleted: 25, events: 27 });
    expect(run.steps).toHaveLength(25);
    expect(run.steps[3]).toMatchObject({ step: 3, stage: 's', status: 'completed' });
    expect((await fetch(`${url}/v1/runs/nope`)).status).toBe(404);
    expect(await (await fetch(`${url}/v1/runs/run-api/rollouts`)).json()).toEqual({ rollouts: [], next: null });
    expect(await (await fetch(`${url}/v1/projections`)).json()).toEqual({ readModels: expect.objectContaining({ events: 27, lag: 0 }), kafka: null });
    expect((await fetch(`${url}/v1/runs?status=nope`)).status).toBe(400);
  });

  it('rejects bad query parameters with 400 naming the field', async () => {
    const bad = await fetch(`${url}/v1/runs/run-api/events?type=Nope`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).message).toContain('"type"');
    const badAfter = await fetch(`${url}/v1/runs/run-api/events?after=xyz`);
    expect(badAfter.status).toBe(400);
    expect(((await badAfter.json()) as any).message).toContain('"after"');
  });

  it('serves the dashboard views: a run, typed 404/400 answers, the live feed as server-sent events', async () => {
    const runs = (await (await fetch(`${url}/v1/views/runs`)).json()) as any;
    expect(runs.runs).toEqual([expect.objectContaining({ runId: 'run-api', status: 'completed', stepsCompleted: 25, step: 24, lastReward: null })]);
    const run = (await (await fetch(`${url}/v1/views/runs/run-api`)).json()) as any;
    expect(run.steps.map((s: { step: number }) => s.step)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    const missing = await fetch(`${url}/v1/views/runs/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'not_found', field: 'run' });
    const bad = await fetch(`${url}/v1/views/runs/run-api/rollouts?limit=0`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).message).toContain('"limit"');
    const ui = await fetch(`${url}/ui/`);
    expect(ui.status).toBe(503);
    expect(await ui.text()).toContain('pnpm nx build dashboard');
    // The live feed from the start of the log: one `update` event carrying the run's 25 steps.
    const ctl = new AbortController();
    const sse = await fetch(`${url}/v1/live/runs/run-api?cursor=0-0`, { signal: ctl.signal });
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    const reader = sse.body!.getReader();
    let text = '';
    while (!/\ndata: .*\n\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    ctl.abort();
    expect(text).toMatch(/^event: update$/m);
    const update = JSON.parse(/^data: (.*)$/m.exec(text)![1]);
    expect(update.steps).toHaveLength(25);
    expect(update.run).toMatchObject({ runId: 'run-api', status: 'completed' });
  });

  it('serves liveness, readiness of NATS, Postgres and the archiver, and Prometheus metrics', async () => {
    expect(await (await fetch(`${url}/health/live`)).json()).toMatchObject({ status: 'ok', service: 'control-plane' });
    const ready = (await (await fetch(`${url}/health/ready`)).json()) as any;
    expect(ready).toMatchObject({ status: 'ok', info: { nats: { status: 'up' }, postgres: { status: 'up' }, archiver: { status: 'up' }, 'read-models': { status: 'up' }, projector: { status: 'up' } } });
    expect(await (await fetch(`${url}/v1/archive`)).json()).toEqual({ events: 27, archiverLag: 0 });
    const m = await (await fetch(`${url}/metrics`)).text();
    expect(m).toContain('rstar_archiver_events_total{result="appended"}');
    expect(m).toContain('rstar_consumer_lag');
    expect(m).toContain('rstar_process_cpu_seconds_total');
    expect(m).toContain('rstar_projection_events_total{projection="read-models"} 27');
  });
});

describe('control-plane before Postgres and NATS answer: every API route says 503 through the one error filter', () => {
  let app: INestApplication;
  let url: string;
  beforeAll(async () => {
    // Port 9 on loopback (discard) has no server: the dependencies keep retrying and never connect.
    ({ app, url } = await startService(
      ControlPlaneModule.forRoot({ PORT: '0', HOST: '127.0.0.1', RSTAR_NATS_URL: 'nats://127.0.0.1:9', RSTAR_DATABASE_URL: 'postgres://rstar:rstar@127.0.0.1:9/none', RSTAR_UI_DIR: mkdtempSync(join(tmpdir(), 'rstar-no-ui-')) }),
      'control-plane',
    ));
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers 503 dependency_not_ready on the runs, archive and views routes (not 500); projections reports null', async () => {
    for (const path of ['/v1/runs', '/v1/runs/r1', '/v1/runs/r1/events', '/v1/rollouts/x', '/v1/archive', '/v1/views/runs', '/v1/views/runs/r1']) {
      const r = await fetch(`${url}${path}`);
      expect(r.status, path).toBe(503);
      expect(await r.json(), path).toMatchObject({ statusCode: 503, code: 'dependency_not_ready', message: expect.stringContaining('not connected yet') });
    }
    expect(await (await fetch(`${url}/v1/projections`)).json()).toEqual({ readModels: null, kafka: null });
    expect((await fetch(`${url}/health/ready`)).status).toBe(503);
  });
});
