import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent } from '@rstar/contracts';
import { createLogger } from '@rstar/telemetry';
import { startControlPlane, type ControlPlane } from './control-plane.app';

describe('control-plane HTTP API (standalone runtime)', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane({ natsUrl: '', databaseUrl: '', port: 0, logger: createLogger('test', { write: () => {} }) });
    const run = 'run-api';
    await cp.runtime.bus.publish([
      makeEvent('RunStarted', { runId: run, streamId: `run-${run}`, key: run, producer: 't', data: { config: {}, seed: 1, codeVersion: 'x', mode: 'standalone' } }),
      ...Array.from({ length: 25 }, (_, i) =>
        makeEvent('StepCompleted', { runId: run, streamId: `run-${run}`, key: `${run}:${i}`, producer: 't', data: { step: i, stage: 's', metrics: { reward: i } } }),
      ),
      makeEvent('RunCompleted', { runId: run, streamId: `run-${run}`, key: run, producer: 't', data: { steps: 25, summary: {} } }),
    ]);
    await cp.runtime.flush();
  });
  afterAll(async () => cp?.close());

  it('lists runs and pages a run\'s events with a cursor and a type filter', async () => {
    const runs = (await (await fetch(`${cp.url}/v1/runs`)).json()) as any;
    expect(runs.runs).toEqual([expect.objectContaining({ runId: 'run-api', events: 27, status: 'completed' })]);
    const ids: string[] = [];
    let after = '';
    for (;;) {
      const r = await fetch(`${cp.url}/v1/runs/run-api/events?type=StepCompleted&limit=10${after ? `&after=${after}` : ''}`);
      expect(r.status).toBe(200);
      const page = (await r.json()) as any;
      if (!page.events.length) break;
      ids.push(...page.events.map((e: { id: string }) => e.id));
      after = page.next;
    }
    expect(ids).toHaveLength(25);
    expect(ids[0]).toBe('StepCompleted:run-api:0');
  });

  it('rejects bad query parameters with 400 naming the field', async () => {
    const bad = await fetch(`${cp.url}/v1/runs/run-api/events?type=Nope`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).message).toContain('"type"');
    const badAfter = await fetch(`${cp.url}/v1/runs/run-api/events?after=xyz`);
    expect(badAfter.status).toBe(400);
    expect(((await badAfter.json()) as any).message).toContain('"after"');
  });

  it('serves health and Prometheus metrics', async () => {
    const h = (await (await fetch(`${cp.url}/health`)).json()) as any;
    expect(h).toMatchObject({ status: 'ok', mode: 'standalone', events: 27, archiverLag: 0 });
    const m = await (await fetch(`${cp.url}/metrics`)).text();
    expect(m).toContain('rstar_archiver_events_total{result="appended"}');
    expect(m).toContain('rstar_consumer_lag');
  });
});
