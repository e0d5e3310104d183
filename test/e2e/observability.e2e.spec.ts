import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';
import { ids, parseRunConfig, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { ReadModels } from '@rstar/read-models';
import { groupTable, indexRun, runSummary, stepTable } from '@rstar/replay';
import { freeLocalPort, jaegerMissing, type JaegerServer, type KafkaBroker, kafkaMissing, skipUnlessCi, startJaeger, startKafkaBroker, until } from '@rstar/testing';
import { readRunEvents } from '@rstar/step-driver';
import { submitRemoteRun } from '@rstar/training';
import { createPrivateDatabase, ServiceProcess, startPrivateNats, type PrivateDatabase, type PrivateNats } from '../support/service-process';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const DASHBOARD = resolve(__dirname, '../../infra/grafana/rstar-dashboard.json');
const missing = skipUnlessCi(jaegerMissing() ?? kafkaMissing());
const STEPS = 2;
const PROMPTS = 3;

type Svc = 'control-plane' | 'tool-execution' | 'reward-grading' | 'resampling' | 'optimization' | 'policy-serving';

/** A span as Jaeger's query API returns it. */
interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: Array<{ refType: 'CHILD_OF' | 'FOLLOWS_FROM'; traceID: string; spanID: string }>;
  tags: Array<{ key: string; value: unknown }>;
  processID: string;
  service: string;
}

/** The spans of one trace from Jaeger's query API, each with its service name. */
async function jaegerTrace(jaeger: JaegerServer, traceId: string): Promise<JaegerSpan[]> {
  const r = await fetch(`${jaeger.queryUrl}/api/traces/${traceId}`);
  if (r.status === 404) return [];
  const body = (await r.json()) as { data: Array<{ spans: JaegerSpan[]; processes: Record<string, { serviceName: string }> }> };
  return (body.data ?? []).flatMap((t) => t.spans.map((s) => ({ ...s, service: t.processes[s.processID].serviceName })));
}

const tag = (s: JaegerSpan, key: string) => s.tags.find((t) => t.key === key)?.value;
const parentOf = (s: JaegerSpan) => s.references.find((r) => r.refType === 'CHILD_OF')?.spanID;
const traceIdOf = (traceparent: string | null) => traceparent?.split('-')[1] ?? '';

/**
 * See everything (issue "OpenTelemetry traces, RL metrics, read models, Kafka export"): the six services
 * as real processes (their own main.ts, OpenTelemetry started first) on a private NATS and Postgres, a
 * private Jaeger (OTLP in, query API out) and Kafka broker, and a short distributed run. Then: every event
 * a service published carries `meta.traceparent`; one rollout's trace in Jaeger spans optimization,
 * policy-serving (engine requests with token counts), tool-execution (status, wall time), reward-grading
 * and resampling with the right parent links; the step's `optimize` span links to the rollouts' traces;
 * log lines carry the trace id; every Grafana panel's metric is in a scrape of the running services; and
 * the read models the control-plane projected equal replay's projections of the archived run.
 */
describe.skipIf(missing)('observability of a distributed run: Jaeger traces, Prometheus metrics, read models', () => {
  const dbName = `obs_${process.pid}_${Date.now()}`;
  let nats: PrivateNats | undefined;
  let db: PrivateDatabase | undefined;
  let jaeger: JaegerServer | undefined;
  let kafka: KafkaBroker | undefined;
  let engine: BuiltinEngine | undefined;
  let store: EventStore | undefined;
  let ckptDir = '';
  const svcs = new Map<Svc, ServiceProcess>();
  const runId = ids.newRun();
  let events: RstarEvent[] = [];

  beforeAll(async () => {
    const ckpt = await ensureSftCheckpoint();
    ckptDir = mkdtempSync(join(tmpdir(), 'rstar-obs-'));
    [nats, db, jaeger, kafka] = await Promise.all([startPrivateNats(), createPrivateDatabase(PG_URL, dbName), startJaeger(), startKafkaBroker()]);
    engine = await startBuiltinEngine({ port: 0, host: '127.0.0.1', checkpointDir: ckpt, kvCapacityTokens: 160 * 64 });
    const common = {
      RSTAR_NATS_URL: nats.url, RSTAR_DATABASE_URL: db.url, RSTAR_LOG_LEVEL: 'warn',
      // The standard OpenTelemetry variables only; a short batch delay so the spans are in Jaeger soon.
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl, OTEL_BSP_SCHEDULE_DELAY: '300',
    };
    const engines = `builtin=${engine.url}`;
    const env: Record<Svc, Record<string, string>> = {
      'control-plane': { RSTAR_KAFKA_BROKERS: kafka.broker, RSTAR_KAFKA_PARTITIONS: '2' },
      'tool-execution': { RSTAR_SANDBOX_WORKERS: '1' },
      'reward-grading': { RSTAR_GRADER_SANDBOX_WORKERS: '1' },
      resampling: {},
      optimization: { RSTAR_ENGINES: engines, RSTAR_CHECKPOINT_DIR: ckptDir },
      'policy-serving': { RSTAR_ENGINES: engines, RSTAR_COMPACT_PROMPT: '1', RSTAR_LOG_LEVEL: 'debug' },
    };
    const order: Svc[] = ['control-plane', 'tool-execution', 'reward-grading', 'resampling', 'optimization', 'policy-serving'];
    for (const svc of order) {
      svcs.set(svc, new ServiceProcess({ name: svc, entry: `services/${svc}/src/main.ts`, port: await freeLocalPort(), env: { ...common, ...env[svc] } }));
    }
    await svcs.get('control-plane')!.start();
    await Promise.all(order.slice(1).map((s) => svcs.get(s)!.start()));
    store = await EventStore.connect({ connectionString: db.url });
    const config = parseRunConfig({
      name: 'observability', seed: 5, policy: { model: { layers: 2, dModel: 64, heads: 4, context: 160 }, init: 'checkpoint', checkpoint: ckpt },
      data: { source: 'tasks', heldOutSize: 4, trainSize: 256 },
      stages: [{ name: 'rl-1', steps: STEPS, promptsPerStep: PROMPTS, groupSize: 2, oversample: 2, maxResponseTokens: 112, maxTurns: 3, lr: 0.0005 }],
      trainer: { warmupSteps: 1 },
    });
    await submitRemoteRun(config, { natsUrl: nats.url, runId });
    await until(async () => (await readRunEvents(store!, runId, ['RunCompleted', 'RunFailed'])).length > 0 || null, `run ${runId} to finish`, { timeoutMs: 600_000, everyMs: 500 });
    events = await readRunEvents(store, runId);
  }, SFT_CHECKPOINT_TIMEOUT_MS + 900_000);

  afterAll(async () => {
    await Promise.all([...svcs.values()].map((s) => s.stop()));
    await store?.close().catch(() => undefined);
    await engine?.close().catch(() => undefined);
    await Promise.all([nats?.stop(), jaeger?.stop(), kafka?.destroy(), db?.drop()].map((p) => p?.catch(() => undefined)));
    if (ckptDir) rmSync(ckptDir, { recursive: true, force: true });
  }, 120_000);

  it('the run completed, and every event a service published carries a W3C traceparent', () => {
    expect(events.filter((e) => e.type === 'RunFailed')).toEqual([]);
    expect(events.filter((e) => e.type === 'RunCompleted')).toHaveLength(1);
    const published = events.filter((e) => e.meta.producer !== 'cli');
    expect(published.length).toBeGreaterThan(50);
    const untraced = published.filter((e) => !/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/.test(e.meta.traceparent ?? ''));
    expect(untraced.map((e) => `${e.id} (${e.meta.producer})`)).toEqual([]);
  });

  it("one rollout's trace spans optimization, policy-serving, tool-execution, reward-grading and resampling with correct parent links", async () => {
    const completed = events.filter((e): e is RstarEvent<'RolloutCompleted'> => e.type === 'RolloutCompleted' && e.data.toolCalls > 0);
    expect(completed.length, 'a rollout that called the tool').toBeGreaterThan(0);
    const rolloutId = completed[0].data.rolloutId;
    const requested = events.find((e) => e.type === 'RolloutRequested' && e.data.rolloutId === rolloutId)!;
    const traceId = traceIdOf(requested.meta.traceparent);
    const need = ['optimization', 'policy-serving', 'tool-execution', 'reward-grading', 'resampling'];
    const spans = await until(async () => {
      const s = await jaegerTrace(jaeger!, traceId);
      return need.every((svc) => s.some((x) => x.service === svc)) && s.some((x) => x.operationName === 'sandbox.execute') ? s : null;
    }, `the trace of ${rolloutId} in Jaeger`, { timeoutMs: 60_000, everyMs: 500 });
    const byId = new Map(spans.map((s) => [s.spanID, s]));
    const one = (svc: string, op: string, parent?: JaegerSpan) => {
      const found = spans.filter((s) => s.service === svc && s.operationName === op && (!parent || parentOf(s) === parent.spanID));
      expect(found.length, `${svc} span "${op}"${parent ? ` under "${parent.operationName}"` : ''}`).toBeGreaterThan(0);
      return found[0];
    };
    // optimization: the rollout's own trace starts with its RolloutRequested.
    const root = one('optimization', 'rollout');
    expect(root.references.filter((r) => r.refType === 'CHILD_OF')).toEqual([]);
    expect(tag(root, 'rstar.rollout.id')).toBe(rolloutId);
    // policy-serving: the consumer span of RolloutRequested, the agent loop, engine requests with token counts.
    const consume = one('policy-serving', 'process RolloutRequested', root);
    const loop = one('policy-serving', 'rollout', consume);
    const generate = spans.filter((s) => s.operationName === 'engine.generate' && parentOf(s) === loop.spanID);
    expect(generate.length).toBe(completed[0].data.turns);
    for (const g of generate) {
      expect(Number(tag(g, 'gen_ai.usage.input_tokens'))).toBeGreaterThan(0);
      expect(Number(tag(g, 'gen_ai.usage.output_tokens'))).toBeGreaterThan(0);
    }
    // tool-execution: each tool call's request is handled under the caller's tool_call span.
    const call = one('policy-serving', 'tool_call', loop);
    const execConsume = one('tool-execution', 'process ToolCallRequested', call);
    const sandbox = one('tool-execution', 'sandbox.execute', execConsume);
    expect(String(tag(sandbox, 'rstar.tool.status'))).toMatch(/^(ok|runtime_error|timeout|memory_limit|output_limit|killed|sandbox_error)$/);
    expect(Number(tag(sandbox, 'rstar.tool.wall_ms'))).toBeGreaterThanOrEqual(0);
    expect(tag(call, 'rstar.tool.status')).toBe(tag(sandbox, 'rstar.tool.status'));
    // reward-grading: RolloutCompleted was published in policy-serving's consumer span.
    const grading = one('reward-grading', 'process RolloutCompleted', consume);
    const grade = one('reward-grading', 'grade', grading);
    const reward = events.find((e) => e.type === 'RewardAssigned' && e.data.rolloutId === rolloutId) as RstarEvent<'RewardAssigned'>;
    expect(tag(grade, 'rstar.grade.rule')).toBe(reward.data.rule);
    // resampling: the reward's consumer span.
    one('resampling', 'process RewardAssigned', grading);
    // Every parent link stays inside the trace.
    for (const s of spans) if (parentOf(s)) expect(byId.has(parentOf(s)!), `parent of ${s.service} ${s.operationName}`).toBe(true);
    // Log lines written while handling the rollout carry its trace id.
    const logs = svcs.get('policy-serving')!.output.split('\n').filter((l) => l.includes('"rollout completed"') && l.includes(rolloutId));
    expect(logs.length).toBeGreaterThan(0);
    expect(JSON.parse(logs[0]).traceId).toBe(traceId);
  });

  it("the step's optimize span links to the traces of the rollouts it trained on", async () => {
    const optimized = events.find((e) => e.type === 'StepOptimized');
    expect(optimized, 'a step that trained').toBeDefined();
    const stepTrace = traceIdOf(optimized!.meta.traceparent);
    const optimize = await until(async () => (await jaegerTrace(jaeger!, stepTrace)).find((s) => s.operationName === 'optimize') ?? null, 'the optimize span', { timeoutMs: 60_000, everyMs: 500 });
    const linked = new Set(optimize.references.filter((r) => r.refType === 'FOLLOWS_FROM').map((r) => r.traceID));
    const step = (optimized as RstarEvent<'StepOptimized'>).data.step;
    const kept = new Set(events.filter((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.step === step).flatMap((e) => e.data.kept));
    const keptTraces = new Set(events.filter((e) => e.type === 'RolloutRequested' && kept.has(e.data.rolloutId)).map((e) => traceIdOf(e.meta.traceparent)));
    expect(keptTraces.size).toBeGreaterThan(0);
    expect([...linked].sort()).toEqual([...keptTraces].sort());
    const trace = await jaegerTrace(jaeger!, stepTrace);
    for (const op of ['train', 'checkpoint', 'weight_sync']) expect(trace.find((s) => s.operationName === op && parentOf(s) === optimize.spanID), op).toBeDefined();
  });

  it("every metric the Grafana dashboard plots is in a scrape of the running services", async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
    const wanted = new Map<string, string>();
    for (const p of dashboard.panels) for (const t of p.targets ?? []) for (const m of t.expr.match(/\brstar_[a-z0-9_]+/g) ?? []) wanted.set(m, p.title);
    expect(wanted.size).toBeGreaterThan(30);
    const scrape = async () => {
      const urls = [...svcs.values()].map((s) => `http://127.0.0.1:${s.opts.port}/metrics`);
      const texts = await Promise.all(urls.map(async (u) => (await fetch(u)).text()));
      // Sample lines only (a registered metric without a sample shows just its HELP and TYPE).
      return new Set(texts.flatMap((t) => t.split('\n')).filter((l) => l && !l.startsWith('#')).map((l) => l.split(/[{ ]/)[0]));
    };
    const absent = await until(async () => {
      const have = await scrape();
      const gone = [...wanted.keys()].filter((m) => !have.has(m));
      return gone.length === 0 ? gone : null;
    }, 'every dashboard metric to have a sample (consumer lag and export lag are sampled every few seconds)', { timeoutMs: 60_000, everyMs: 1_000 }).catch(async () => {
      const have = await scrape();
      return [...wanted].filter(([m]) => !have.has(m)).map(([m, panel]) => `${m} (panel "${panel}")`);
    });
    expect(absent).toEqual([]);
  });

  it('the read models control-plane projected equal replay on the archived run', async () => {
    const rm = await ReadModels.open({ connectionString: db!.url, poolSize: 2 });
    try {
      await until(async () => (await rm.projector().lag()) === 0 || null, 'the projector to catch up');
      const ix = indexRun(events, runId);
      expect(await rm.repository.runSummary(runId)).toEqual(runSummary(ix));
      expect(await rm.repository.stepTable(runId)).toEqual(stepTable(ix));
      expect(await rm.repository.groupTable(runId)).toEqual(groupTable(ix));
    } finally {
      await rm.close();
    }
  });
});
