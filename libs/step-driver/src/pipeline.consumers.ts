import { delay, JetStreamBus, type EventBus } from '@rstar/messaging';

/**
 * The durable consumers every stage of a distributed run subscribes with by default (the services'
 * RSTAR_*_DURABLE settings): tool-execution, reward-grading, resampling, policy-serving's rollout queue and
 * the control plane's archiver. Override with `RSTAR_PIPELINE_DURABLES` (comma-separated) when a
 * deployment renames them.
 */
export function pipelineDurables(env: NodeJS.ProcessEnv = process.env): string[] {
  const given = env.RSTAR_PIPELINE_DURABLES?.split(',').map((s) => s.trim()).filter(Boolean);
  return given?.length ? given : ['tool-execution', 'reward-grading', 'resampling', 'policy-serving-rollouts', 'archiver'];
}

/**
 * The optimization service's consumer of the run it drives (groups, rollouts, failures): one fixed name,
 * since the service drives one run at a time and its NATS permissions grant it its own durables only.
 */
export const OPTIMIZATION_STEPS_DURABLE = 'optimization-steps';

/**
 * Wait until every named durable consumer exists on the bus (no-op on the in-process bus, whose
 * subscriptions live in this process). A durable created after work was published would start past it,
 * so starting a run before the services subscribed could strand its first events. `onWait` is called with
 * the missing names every `reportEveryMs` while waiting. Never gives up: the caller decides how long to wait.
 */
export async function waitForConsumers(
  bus: EventBus,
  names: readonly string[],
  opts: { onWait?: (missing: string[]) => void; reportEveryMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  if (!(bus instanceof JetStreamBus)) return;
  let lastReport = 0;
  for (let attempt = 1; ; attempt++) {
    const missing = await bus.missingConsumers(names);
    if (missing.length === 0) return;
    if (opts.signal?.aborted) throw opts.signal.reason ?? new Error('aborted');
    if (Date.now() - lastReport >= (opts.reportEveryMs ?? 10_000)) {
      lastReport = Date.now();
      opts.onWait?.(missing);
    }
    await delay(Math.min(2_000, 100 * attempt));
  }
}
