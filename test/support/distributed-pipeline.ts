import { expect } from 'vitest';
import { parseRunConfig, type EventType, type RstarEvent, type RunConfig } from '@rstar/contracts';
import { freePort, ServiceProcess } from './service-process';

/** The six services of a distributed run. */
export type PipelineService = 'control-plane' | 'tool-execution' | 'reward-grading' | 'resampling' | 'optimization' | 'policy-serving';

/** Start order: the archiver first, so nothing published is missing from the archive a test asserts on. */
export const PIPELINE_ORDER: readonly PipelineService[] = ['control-plane', 'tool-execution', 'reward-grading', 'resampling', 'optimization', 'policy-serving'];

/** Options of {@link startPipeline}. */
export interface PipelineOptions {
  /** RSTAR_NATS_URL: one server or a cluster's URLs, comma-separated. */
  natsUrl: string;
  databaseUrl: string;
  /** The built-in engine the rollouts and weight pushes go to. */
  engineUrl: string;
  checkpointDir: string;
  /** Extra environment for every service (e.g. RSTAR_STREAM_REPLICAS). */
  env?: Record<string, string>;
  /** Ack waits of the archiver and policy-serving, shortened so redeliveries come within a test's budget (default 5000). */
  ackWaitMs?: number;
}

/**
 * Every rstar service as a real child process (`ServiceProcess`, its own main.ts) against the given
 * NATS and Postgres, one sandbox worker each; resolves once each answers 200 on `/health/ready`.
 */
export async function startPipeline(opts: PipelineOptions): Promise<Map<PipelineService, ServiceProcess>> {
  const ack = String(opts.ackWaitMs ?? 5_000);
  const engines = `builtin=${opts.engineUrl}`;
  const common = { RSTAR_NATS_URL: opts.natsUrl, RSTAR_DATABASE_URL: opts.databaseUrl, RSTAR_LOG_LEVEL: 'warn', ...opts.env };
  const env: Record<PipelineService, Record<string, string>> = {
    'control-plane': { RSTAR_ARCHIVER_ACK_WAIT_MS: ack },
    'tool-execution': { RSTAR_SANDBOX_WORKERS: '1' },
    'reward-grading': { RSTAR_GRADER_SANDBOX_WORKERS: '1' },
    resampling: {},
    optimization: { RSTAR_ENGINES: engines, RSTAR_CHECKPOINT_DIR: opts.checkpointDir },
    'policy-serving': { RSTAR_ENGINES: engines, RSTAR_COMPACT_PROMPT: '1', RSTAR_INSTANCE_ID: 'pipeline-0', RSTAR_ACK_WAIT_MS: ack },
  };
  const svcs = new Map<PipelineService, ServiceProcess>();
  for (const svc of PIPELINE_ORDER) {
    svcs.set(svc, new ServiceProcess({ name: svc, entry: `services/${svc}/src/main.ts`, port: await freePort(), env: { ...common, ...env[svc] } }));
  }
  try {
    await svcs.get('control-plane')!.start();
    await Promise.all(PIPELINE_ORDER.slice(1).map((s) => svcs.get(s)!.start()));
  } catch (e) {
    await stopPipeline(svcs);
    throw e;
  }
  return svcs;
}

/** Stop every service (SIGTERM, then SIGKILL). Never throws. */
export async function stopPipeline(svcs: Map<PipelineService, ServiceProcess> | undefined): Promise<void> {
  if (svcs) await Promise.all([...svcs.values()].map((s) => s.stop()));
}

/** The shape of a small RL run from a checkpoint: `steps` steps of `prompts` groups of `group x oversample` rollouts. */
export interface RunShape {
  steps: number;
  prompts: number;
  group: number;
  oversample: number;
}

/** A short distributed RL run of the tiny policy from an SFT checkpoint (no SFT stage), seeded. */
export function shortRunConfig(name: string, seed: number, checkpoint: string, shape: RunShape): RunConfig {
  return parseRunConfig({
    name, seed,
    policy: { model: { layers: 2, dModel: 64, heads: 4, context: 160 }, init: 'checkpoint', checkpoint },
    data: { source: 'tasks', heldOutSize: 4, trainSize: 256 },
    stages: [{ name: 'rl-1', steps: shape.steps, promptsPerStep: shape.prompts, groupSize: shape.group, oversample: shape.oversample, maxResponseTokens: 112, maxTurns: 3, lr: 0.0005 }],
    trainer: { warmupSteps: 1 },
  });
}

/**
 * The exactly-once checks of a finished run's archived events: no id twice; one RunStarted, one
 * RunCompleted, no RunFailed; every requested rollout completed and rewarded exactly once; every group
 * resampled once; every step completed once; each rollout's TurnGenerated events numbered 0..turns-1.
 */
export function expectRunExactlyOnce(events: readonly RstarEvent[], shape: RunShape): void {
  const count = (type: EventType) => events.filter((e) => e.type === type).length;
  expect(new Set(events.map((e) => e.id)).size, 'distinct event ids').toBe(events.length);
  expect(count('RunFailed')).toBe(0);
  expect(count('RunStarted')).toBe(1);
  expect(count('RunCompleted')).toBe(1);
  const per = (type: EventType, key: (e: RstarEvent) => string) => {
    const m = new Map<string, number>();
    for (const e of events) if (e.type === type) m.set(key(e), (m.get(key(e)) ?? 0) + 1);
    return m;
  };
  const rid = (e: RstarEvent) => (e.data as { rolloutId: string }).rolloutId;
  const gid = (e: RstarEvent) => (e.data as { groupId: string }).groupId;
  const rollouts = shape.steps * shape.prompts * shape.group * shape.oversample;
  const requested = per('RolloutRequested', rid);
  expect(requested.size).toBe(rollouts);
  const completed = per('RolloutCompleted', rid);
  const rewarded = per('RewardAssigned', rid);
  for (const r of requested.keys()) {
    expect(completed.get(r), `RolloutCompleted of ${r}`).toBe(1);
    expect(rewarded.get(r), `RewardAssigned of ${r}`).toBe(1);
  }
  expect(completed.size).toBe(rollouts);
  expect(rewarded.size).toBe(rollouts);
  const groups = new Set(events.filter((e) => e.type === 'RolloutRequested').map(gid));
  expect(groups.size).toBe(shape.steps * shape.prompts);
  const resampled = per('GroupResampled', gid);
  for (const g of groups) expect(resampled.get(g), `GroupResampled of ${g}`).toBe(1);
  const steps = per('StepCompleted', (e) => String((e.data as { step: number }).step));
  expect(steps.size).toBe(shape.steps);
  expect([...steps.values()].every((n) => n === 1)).toBe(true);
  const turnsOf = new Map<string, number[]>();
  for (const e of events) if (e.type === 'TurnGenerated') turnsOf.set(e.data.rolloutId, [...(turnsOf.get(e.data.rolloutId) ?? []), e.data.turn]);
  for (const c of events) {
    if (c.type !== 'RolloutCompleted') continue;
    const turns = (turnsOf.get(c.data.rolloutId) ?? []).sort((a, b) => a - b);
    expect(turns, `turns of ${c.data.rolloutId}`).toEqual(Array.from({ length: c.data.turns }, (_, k) => k));
  }
}
