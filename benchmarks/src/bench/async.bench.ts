import { ids, parseRunConfig, type RstarEvent, type RunConfig } from '@rstar/contracts';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { IM_END, type GenerateRequest, type GenerateResult } from '@rstar/agent';
import type { EngineAdapter } from '@rstar/engines';
import type { TrainingBatch } from '@rstar/grpo';
import { Tokenizer } from '@rstar/policy';
import { SandboxPool } from '@rstar/sandbox';
import { OptimizationHandler, readRunEvents, runEventSource, type PromptSource, type Trainer } from '@rstar/step-driver';
import { startRolloutServices } from '@rstar/training';
import { createLogger } from '@rstar/telemetry';
import { dropBenchSchemas, intArg } from './bench.args';

/**
 * `pnpm bench async [--steps N] [--engine-ms-per-token M]`: steps per minute of the same GRPO-RoC run,
 * synchronous (η = 0) vs bounded-staleness async (`async.maxStaleness` η = 1 and η = 2), over the real
 * bus (JetStream), archive (Postgres, an in-process archiver) and rollout path (policy-serving's handler
 * with its engine pool, scheduler and policy-version gate, tool execution, reward grading, the resampler)
 * and the real step driver. The engine and the trainer do no compute: on two shared CPU cores a real model
 * and a real trainer could not run at the same time, so both are wall-clock delays per token, which makes
 * the overlap of the control plane measurable. The engine decodes every rollout of a step in parallel
 * (continuous batching: `--engine-ms-per-token` per decode step, default 25); the trainer's delay per
 * loss token is calibrated so one step's update takes as long as one step's generation (the balanced
 * case, where overlap can at most halve a step). A weight reload costs 100 ms. Reported per mode:
 * steps/min, trainer idle share (wall time outside `trainStep`), engine idle share (decode slots idle),
 * and the largest staleness a trained rollout had. Servers: RSTAR_NATS_URL / RSTAR_DATABASE_URL, else the
 * test servers; a private stream and schema, dropped at the end.
 */
export async function run(args: string[]): Promise<object> {
  const steps = intArg(args, '--steps', 6);
  const msPerToken = intArg(args, '--engine-ms-per-token', 25);
  const pgUrl = process.env.RSTAR_DATABASE_URL || process.env.RSTAR_TEST_DATABASE_URL || 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
  const natsUrl = process.env.RSTAR_NATS_URL || process.env.RSTAR_TEST_NATS_URL || 'nats://127.0.0.1:4222';
  const say = (m: string) => process.stderr.write(`[async] ${m}\n`);
  const shape = { prompts: 4, group: 2, oversample: 2, responseTokens: 96 };
  // Kept rollouts per step x loss tokens each: the trainer's tokens per step when no group is dropped.
  const trainTokens = shape.prompts * shape.group * shape.responseTokens;
  const genMs = shape.responseTokens * msPerToken;
  const trainMsPerToken = genMs / trainTokens;
  say('engine and trainer compute are calibrated wall-clock delays per token: on 2 CPU cores real generation and training cannot overlap, the delays make the control plane\'s overlap measurable');
  say(`${steps} steps x ${shape.prompts} prompts x ${shape.group * shape.oversample} rollouts of ${shape.responseTokens} tokens; engine ${msPerToken} ms/token (${genMs} ms per step's generation), trainer ${trainMsPerToken.toFixed(3)} ms/loss token (${genMs} ms per full batch)`);
  const tag = `benchasync${process.pid}${Date.now().toString(36)}`;
  const schemas: string[] = [];
  const results: Record<string, ModeResult> = {};
  const sandbox = new SandboxPool({ workers: 1 });
  await sandbox.start();
  try {
    for (const [label, eta] of [['sync', 0], ['async1', 1], ['async2', 2]] as const) {
      const schema = `${tag}_${label}`;
      schemas.push(schema);
      const runtime = await connectRuntime({
        natsUrl, databaseUrl: pgUrl, schema, stream: `${tag}_${label}`.toUpperCase(), subjectPrefix: `${tag}${label}`, archive: true,
        name: `bench-async-${label}`, logger: createLogger('bench', { level: 'warn' }),
      });
      try {
        results[label] = await runMode(runtime, sandbox, { eta, steps, shape, msPerToken, trainMsPerToken });
      } finally {
        const js = (runtime.bus as unknown as { jsm?: { streams: { delete(s: string): Promise<unknown> } }; stream?: string });
        await runtime.close();
        if (js.jsm && js.stream) await js.jsm.streams.delete(js.stream).catch(() => undefined);
      }
      const r = results[label];
      say(`${label} (η = ${eta}): ${r.stepsPerMin.toFixed(2)} steps/min, trainer idle ${(100 * r.trainerIdle).toFixed(1)}%, engine idle ${(100 * r.engineIdle).toFixed(1)}%, max staleness ${r.maxStaleness}, discarded ${r.discarded}`);
    }
  } finally {
    await sandbox.close();
    await dropBenchSchemas(pgUrl, schemas).catch(() => undefined);
  }
  const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
  return {
    bench: 'async',
    sync_steps_per_min: round(results.sync.stepsPerMin),
    async1_steps_per_min: round(results.async1.stepsPerMin),
    async2_steps_per_min: round(results.async2.stepsPerMin),
    speedup_eta1: round(results.async1.stepsPerMin / results.sync.stepsPerMin),
    speedup_eta2: round(results.async2.stepsPerMin / results.sync.stepsPerMin),
    trainer_idle: { sync: round(results.sync.trainerIdle, 3), async1: round(results.async1.trainerIdle, 3), async2: round(results.async2.trainerIdle, 3) },
    engine_idle: { sync: round(results.sync.engineIdle, 3), async1: round(results.async1.engineIdle, 3), async2: round(results.async2.engineIdle, 3) },
    max_staleness_seen_eta2: results.async2.maxStaleness,
    max_staleness_seen: results.async1.maxStaleness,
  };
}

interface ModeResult {
  stepsPerMin: number;
  trainerIdle: number;
  engineIdle: number;
  maxStaleness: number;
  discarded: number;
}

interface ModeOptions {
  eta: number;
  steps: number;
  shape: { prompts: number; group: number; oversample: number; responseTokens: number };
  msPerToken: number;
  trainMsPerToken: number;
}

/** One run of `o.steps` steps with η = `o.eta`; wall time from the first request to the last StepCompleted. */
async function runMode(runtime: Runtime, sandbox: SandboxPool, o: ModeOptions): Promise<ModeResult> {
  const runId = ids.newRun();
  const slots = o.shape.prompts * o.shape.group * o.shape.oversample;
  const tokenizer = new Tokenizer();
  const engine = new DelayEngine('delay-0', tokenizer, o.msPerToken, o.shape.responseTokens, slots);
  const trainer = new DelayTrainer(o.trainMsPerToken);
  const config: RunConfig = parseRunConfig({
    name: `bench-async-${o.eta}`, seed: 11,
    policy: { model: { context: 512 } },
    stages: [{ name: 'rl', steps: o.steps, promptsPerStep: o.shape.prompts, groupSize: o.shape.group, oversample: o.shape.oversample, maxResponseTokens: 256, maxTurns: 2, lr: 1e-3 }],
    ...(o.eta > 0 ? { async: { maxStaleness: o.eta } } : {}),
  });
  const services = await startRolloutServices({ bus: runtime.bus, store: runtime.store, runId, config, sandbox, engines: [engine], tokenizer });
  const prompts: PromptSource = { size: 64, get: (i) => ({ promptId: `q${i}`, problem: `What is 6*7? (variant ${i})`, gold: '42' }) };
  const handler = new OptimizationHandler(runtime.bus, {
    config, runId, prompts, trainer, engines: [], checkpointDir: `/tmp/${runId}`, store: runEventSource(runtime.store), mode: 'distributed',
  });
  const t0 = performance.now();
  engine.since = t0;
  trainer.since = t0;
  let summary;
  try {
    summary = await handler.run();
  } finally {
    await handler.stop();
    await services.stop();
  }
  const wall = performance.now() - t0;
  await runtime.flush();
  const events = await readRunEvents(runtime.store, runId, ['StepCompleted', 'RolloutDiscarded']);
  const stale = events.flatMap((e: RstarEvent) => (e.type === 'StepCompleted' && typeof e.data.metrics.stalenessMax === 'number' ? [e.data.metrics.stalenessMax] : []));
  return {
    stepsPerMin: summary.steps / (wall / 60_000),
    trainerIdle: 1 - trainer.busyMs / wall,
    engineIdle: 1 - engine.busySlotMs / (slots * wall),
    maxStaleness: stale.length ? Math.max(...stale) : 0,
    discarded: events.filter((e) => e.type === 'RolloutDiscarded').length,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * An engine whose decoding is a wall-clock delay: every turn answers with a fixed-length reasoning and an
 * `<answer>` block (`\boxed{42}` for even sample indices, `\boxed{41}` for odd, so every group has both
 * rewards), decoded at `msPerToken` per token with up to `slots` turns in parallel (continuous batching).
 * Weight reloads take 100 ms. Counts the slot-milliseconds it decoded.
 */
class DelayEngine implements EngineAdapter {
  readonly kind = 'delay';
  busySlotMs = 0;
  since = 0;
  private running = 0;
  private waiting: Array<() => void> = [];
  constructor(readonly id: string, private readonly tok: Tokenizer, private readonly msPerToken: number, private readonly tokens: number, private readonly slots: number) {}
  async serverInfo() { return { kvCapacityTokens: 1_000_000 }; }
  async generate(req: GenerateRequest): Promise<GenerateResult> {
    while (this.running >= this.slots) await new Promise<void>((r) => this.waiting.push(r));
    this.running++;
    try {
      const parts = req.rid.split(':');
      const sample = Number(parts[parts.length - 2]);
      const tail = `</reason><answer>\\boxed{${sample % 2 === 0 ? 42 : 41}}</answer>${IM_END}`;
      const reasoning = 'six times seven: '.repeat(20);
      let text = reasoning.slice(0, Math.max(0, this.tokens - this.tok.encode(tail).length)) + tail;
      let tokenIds = this.tok.encode(text);
      while (tokenIds.length > this.tokens && text.length > tail.length) {
        text = text.slice(1);
        tokenIds = this.tok.encode(text);
      }
      const ms = tokenIds.length * this.msPerToken;
      await sleep(ms);
      this.busySlotMs += ms;
      return { tokenIds, logprobs: tokenIds.map(() => -0.1), text, finishReason: 'stop' };
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
  async abort() {}
  async updateWeights() { await sleep(100); }
  async flushCache() {}
  async health() { return true; }
}

/** A trainer whose update is a wall-clock delay per loss token of the batch; counts the milliseconds it trained. */
class DelayTrainer implements Trainer {
  version = 0;
  busyMs = 0;
  since = 0;
  constructor(private readonly msPerToken: number) {}
  async trainStep(batch: TrainingBatch) {
    const ms = batch.tokens * this.msPerToken;
    await sleep(ms);
    this.busyMs += ms;
    this.version++;
    return { loss: 0, clipFraction: 0, approxKl: 0, entropy: null, gradNorm: 0 };
  }
  async save(dir: string) {
    return { uri: `${dir}/v${this.version}`, hash: `delay-${this.version}` };
  }
}
