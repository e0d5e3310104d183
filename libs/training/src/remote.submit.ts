import { ids, makeEvent, streams, type RunConfig, RstarError } from '@rstar/contracts';
import { JetStreamBus, securedBusOptionsFromEnv, type EventBus } from '@rstar/messaging';
import { pipelineDurables, RunRefusedError, waitForConsumers } from '@rstar/step-driver';
import { codeVersion } from './code.version';
import { STEP_LINE_LEGEND, stepSummaryLine } from '@rstar/training-report';

/** A remote run that ended with `RunFailed`. */
export class RemoteRunFailedError extends RstarError {
  constructor(readonly runId: string, message: string) {
    super('remote_run_failed', `run ${runId} failed: ${message}`);
  }
}

/** Options of {@link submitRemoteRun}. */
export interface RemoteSubmitOptions {
  /** NATS URL of the running services (JetStream stream `RSTAR`, subjects `rstar.>`), unless `bus` is given. */
  natsUrl?: string;
  bus?: EventBus;
  /** Run id (default a new UUIDv7); the same id re-submits idempotently (RunStarted is deduplicated). */
  runId?: string;
  stream?: string;
  subjectPrefix?: string;
  /**
   * Durable consumers that must exist before the run is published (default: the optimization service's
   * `optimization-runs` (env RSTAR_RUNS_DURABLE) and {@link pipelineDurables}): a service that subscribes
   * for the first time starts at new messages, so a run published before it would never reach it.
   */
  consumers?: readonly string[];
  onLine?: (line: string) => void;
}

/**
 * `rstar train --remote`: submit a run to the services (distributed mode, docs/design/architecture.md §1 mode 2).
 * Waits until the services' consumers exist (`consumers`), then publishes `RunStarted` (id `RunStarted:<runId>`, producer `cli`, the validated config); the
 * optimization service starts the run when it receives it (services/optimization/src/main.ts). Then
 * follows the run's `StepCompleted` events, one line each, until `RunCompleted` (resolves with the
 * run id) or `RunFailed` (throws {@link RemoteRunFailedError}).
 */
export async function submitRemoteRun(config: RunConfig, opts: RemoteSubmitOptions): Promise<string> {
  if (config.validateOnly && config.policy.kind !== 'hf') throw new RunRefusedError(`config "${config.name}" is validateOnly with a ${config.policy.kind} policy; the services run only a Hugging Face policy's GPU config (policy.kind: hf)`, 'validateOnly');
  const runId = opts.runId ?? ids.newRun();
  const own = !opts.bus;
  // On a secured NATS the CLI is the operator's principal (`cli`): its credentials and signing key from the environment.
  const bus = opts.bus ?? (await JetStreamBus.connect({ servers: opts.natsUrl!, stream: opts.stream, subjectPrefix: opts.subjectPrefix, name: `rstar-cli-${runId}`, ...securedBusOptionsFromEnv('cli') }));
  const say = opts.onLine ?? (() => undefined);
  const total = config.stages.reduce((a, s) => a + s.steps, 0);
  let legend = false;
  try {
    await waitForConsumers(bus, opts.consumers ?? [process.env.RSTAR_RUNS_DURABLE || 'optimization-runs', ...pipelineDurables()], {
      onWait: (missing) => say(`waiting for the services to subscribe (no consumer yet: ${missing.join(', ')})`),
    });
    const done = new Promise<void>((resolve, reject) => {
      void bus
        .subscribe({
          durable: `cli-${runId}`,
          types: ['StepCompleted', 'RunCompleted', 'RunFailed'],
          concurrency: 1,
          handler: async (ev) => {
            if (ev.runId !== runId) return;
            if (ev.type === 'StepCompleted') {
              if (!legend) say(STEP_LINE_LEGEND);
              legend = true;
              say(stepSummaryLine({ phase: 'rl', step: ev.data.step, steps: total, stage: ev.data.stage, metrics: ev.data.metrics }));
            }
            else if (ev.type === 'RunCompleted') resolve();
            else if (ev.type === 'RunFailed') reject(new RemoteRunFailedError(runId, ev.data.error));
          },
        })
        .then(async (sub) => {
          await bus.publish(
            makeEvent('RunStarted', {
              runId, streamId: streams.run(runId), key: runId, producer: 'cli',
              data: { config: config as unknown as Record<string, unknown>, seed: config.seed, codeVersion: codeVersion(), mode: 'distributed' },
            }),
          );
          say(`submitted run ${runId} (${total} RL steps); waiting for the optimization service`);
          void done.catch(() => undefined).finally(() => sub.drain());
        }, reject);
    });
    await done;
    say(`run ${runId} completed`);
    return runId;
  } finally {
    if (own) await bus.close();
  }
}
