import { parseRunConfig, type RunConfig } from '@rstar/contracts';
import { freeLocalPort } from '@rstar/testing';
import { ServiceProcess } from './service-process';

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
  // tool-execution, reward-grading and optimization keep their default ack waits (90 s, 30 s, 60 s) here: a
  // tool call redelivered while its first execution's ack was lost (a stream leader killed) runs again and
  // publishes a ToolCallCompleted of the same id with other timings, which the stream stores as a second
  // message (its Nats-Msg-Id digest differs) and the archiver records as an id collision. With 10 s waits the
  // nats-cluster-failover e2e met it inside the run (2026-12-03); see the closing note of stop 37.
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
  // A port from freeLocalPort() is free when asked, but another test process may bind it before the service
  // does (test files run in parallel): such a start is retried on a new port.
  const start = async (svc: PipelineService): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const p = new ServiceProcess({ name: svc, entry: `services/${svc}/src/main.ts`, port: await freeLocalPort(), env: { ...common, ...env[svc] } });
      svcs.set(svc, p);
      try {
        return await p.start();
      } catch (e) {
        if (attempt >= 3 || !/EADDRINUSE/.test((e as Error).message)) throw e;
      }
    }
  };
  try {
    await start('control-plane');
    await Promise.all(PIPELINE_ORDER.slice(1).map(start));
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

/** A short distributed RL run of the tiny policy from an SFT checkpoint (no SFT stage), seeded; `extra` adds top-level config sections (e.g. `roc`). */
export function shortRunConfig(name: string, seed: number, checkpoint: string, shape: RunShape, extra: Record<string, unknown> = {}): RunConfig {
  return parseRunConfig({
    // These runs check delivery under restarts and kills, not time budgets: the 600 s groups had before the
    // budget scaled with maxResponseTokens (336 s here) keeps a slow restart on a loaded machine from timing a group out.
    roc: { groupTimeoutS: 600 },
    ...extra,
    name, seed,
    policy: { model: { layers: 2, dModel: 64, heads: 4, context: 160 }, init: 'checkpoint', checkpoint },
    data: { source: 'tasks', heldOutSize: 4, trainSize: 256 },
    stages: [{ name: 'rl-1', steps: shape.steps, promptsPerStep: shape.prompts, groupSize: shape.group, oversample: shape.oversample, maxResponseTokens: 112, maxTurns: 3, lr: 0.0005 }],
    trainer: { warmupSteps: 1 },
  });
}
