import { runRollout, type RolloutOptions, type RolloutResult, type RolloutSpec, type Tokenizer, type ToolExecutor } from '@rstar/agent';
import type { EnginePool } from '@rstar/engines';

/** What {@link runRolloutBatch} needs. */
export interface RolloutBatchDeps {
  pool: EnginePool;
  tools: ToolExecutor;
  tokenizer: Tokenizer;
  options?: RolloutOptions;
  /** Called as each rollout finishes (in completion order). */
  onDone?: (result: RolloutResult, index: number) => void;
}

/**
 * Run many rollouts against an engine pool without the bus (CLI debugging, benchmarks): all are
 * started at once and the pool's scheduler decides which generate; each releases its reservation on
 * every exit. Returns results in input order. Rejects with the first rollout's error.
 */
export async function runRolloutBatch(specs: readonly RolloutSpec[], deps: RolloutBatchDeps): Promise<RolloutResult[]> {
  return Promise.all(
    specs.map(async (spec, i) => {
      const session = deps.pool.open(spec.rolloutId);
      try {
        const r = await runRollout(spec, { engine: session, tools: deps.tools, tokenizer: deps.tokenizer }, deps.options);
        deps.onDone?.(r, i);
        return r;
      } finally {
        session.release();
      }
    }),
  );
}
