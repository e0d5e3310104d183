import { appendFileSync } from 'node:fs';
import { parseRunConfig } from '@rstar/contracts';
import { connectRuntime } from '@rstar/runtime';
import type { TrainingBatch } from '@rstar/grpo';
import { OptimizationHandler, readRunEvents, resumePoint, runEventSource, type PromptSource, type Trainer } from '@rstar/step-driver';

/**
 * The step driver alone as a child process (test/e2e/async-staleness.e2e.spec.ts SIGKILLs it mid-window):
 * an async run (`ASYNC_ETA`) over JetStream + Postgres (`ASYNC_NATS`, `ASYNC_PG`, `ASYNC_TAG` names the
 * private stream, subject prefix and schema), resumed from the archive like the optimization service
 * does, with a trainer that appends the rollout ids of each batch it trains to `ASYNC_TRAINED` (a line per
 * step) so the test can tell a rollout trained twice. Exits 0 when the run completed.
 */
export const asyncTestPrompts: PromptSource = { size: 32, get: (i) => ({ promptId: `q${i}`, problem: `What is 6*7? (variant ${i})`, gold: '42' }) };

/** The test's run config for η = `eta` (shared by the test and this child). */
export function asyncTestConfig(eta: number, steps: number) {
  return parseRunConfig({
    name: `async-${eta}`, seed: 40 + eta, policy: { model: { context: 512 } },
    stages: [{ name: 'rl', steps, promptsPerStep: 2, groupSize: 2, oversample: 2, maxResponseTokens: 128, maxTurns: 2, lr: 1e-3 }],
    async: { maxStaleness: eta },
  });
}

class RecordingTrainer implements Trainer {
  constructor(public version: number, private readonly file: string, private readonly ms: number) {}
  async trainStep(batch: TrainingBatch) {
    await new Promise((r) => setTimeout(r, this.ms));
    appendFileSync(this.file, JSON.stringify(batch.sequences.map((q) => q.rolloutId)) + '\n');
    this.version++;
    return { loss: 0, clipFraction: 0, approxKl: 0, entropy: null, gradNorm: 0 };
  }
  async save(dir: string) {
    return { uri: `${dir}/v${this.version}`, hash: `h${this.version}` };
  }
}

async function main(): Promise<void> {
  const env = (k: string) => process.env[k] ?? (() => { throw new Error(`${k} is not set`); })();
  const tag = env('ASYNC_TAG');
  const runId = env('ASYNC_RUN');
  const runtime = await connectRuntime({ natsUrl: env('ASYNC_NATS'), databaseUrl: env('ASYNC_PG'), schema: tag, stream: tag.toUpperCase(), subjectPrefix: tag, archive: false, name: `${tag}-driver` });
  const rp = resumePoint(await readRunEvents(runtime.store, runId));
  const trainer = new RecordingTrainer(rp.optimizedNext?.newPolicyVersion ?? rp.policy?.version ?? 0, env('ASYNC_TRAINED'), 300);
  const config = asyncTestConfig(Number(env('ASYNC_ETA')), Number(env('ASYNC_STEPS')));
  const h = new OptimizationHandler(runtime.bus, { config, runId, prompts: asyncTestPrompts, trainer, engines: [], checkpointDir: `/tmp/${runId}`, store: runEventSource(runtime.store), mode: 'distributed' });
  await h.run();
  await h.stop();
  await runtime.close();
}

if (process.env.ASYNC_RUN) {
  main().then(() => process.exit(0), (e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
}
