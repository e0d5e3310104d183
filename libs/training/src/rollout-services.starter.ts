import type { RunConfig } from '@rstar/contracts';
import type { EventStore } from '@rstar/event-store';
import type { EventBus } from '@rstar/messaging';
import type { Tokenizer } from '@rstar/agent';
import { EnginePool, type EngineAdapter } from '@rstar/engines';
import { PolicyServingHandler } from '@rstar/rollouts';
import { ResamplingHandler } from '@rstar/groups';
import { RewardGradingHandler } from '@rstar/rewards';
import { ToolExecutionHandler } from '@rstar/tool-calls';
import type { SandboxPool } from '@rstar/sandbox';
import { resamplingEventSource } from '@rstar/step-driver';

/** What {@link startRolloutServices} needs. */
export interface RolloutServicesOptions {
  bus: EventBus;
  /** The archive the resampler rebuilds its open groups from. */
  store: EventStore;
  /** The run these handlers serve: scopes their durable consumer names and the resampler's rebuild. */
  runId: string;
  /** The run's config: scheduler policy and tool limits. */
  config: RunConfig;
  sandbox: SandboxPool;
  /** Inference engines (policy-serving's pool). */
  engines: readonly EngineAdapter[];
  tokenizer: Tokenizer;
  /** The tokenizer's hash (a model's own tokenizer): rollouts of runs started with another are refused. */
  tokenizerHash?: string;
  /** Policy version the engines hold at start (default 0). */
  initialPolicyVersion?: number;
}

/** The started rollout-side handlers; `stop()` stops them in reverse start order. */
export interface RolloutServices {
  serving: PolicyServingHandler;
  stop(): Promise<void>;
}

/**
 * Every handler of a rollout's path on one bus, wired the way `rstar train` standalone runs them
 * (docs/design/architecture.md §5): tool-execution on the sandbox pool, reward-grading, resampling (rebuilt from the
 * archive for `runId`), and policy-serving over the engines (the run's scheduler policy, compact prompts
 * for the built-in policy, the run's tool limits). The step driver (optimization) is not among them:
 * `rstar train` adds it, `rstar replay rerun --standalone` publishes a recorded step's requests instead.
 * On a start failure the handlers already started are stopped and the error is rethrown.
 */
export async function startRolloutServices(o: RolloutServicesOptions): Promise<RolloutServices> {
  const { bus, config, runId } = o;
  const serving = new PolicyServingHandler(bus, {
    pool: await EnginePool.create(o.engines, config.scheduler), tokenizer: o.tokenizer, tokenizerHash: o.tokenizerHash, compactPrompt: true, initialPolicyVersion: o.initialPolicyVersion ?? 0,
    rollout: { toolTimeoutMs: config.tool.timeoutMs, toolMemoryMb: config.tool.memoryMb, maxParallelCalls: config.tool.maxParallelCalls },
    durable: { rollouts: `policy-serving-rollouts-${runId}`, toolResults: `policy-serving-tool-results-${runId}`, policy: `policy-serving-policy-${runId}` },
  });
  const handlers = [
    new ToolExecutionHandler(bus, o.sandbox, { outputChars: config.tool.outputChars, durable: `tool-execution-${runId}` }),
    new RewardGradingHandler(bus, { durable: `reward-grading-${runId}` }),
    new ResamplingHandler(bus, { store: resamplingEventSource(o.store, runId), durable: `resampling-${runId}` }),
    serving,
  ];
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.splice(0)) await s().catch(() => undefined);
  };
  try {
    for (const h of handlers) {
      await h.start();
      stops.unshift(() => h.stop());
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { serving, stop };
}
