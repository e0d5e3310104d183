import type { WeightProbeResult } from '@rstar/contracts';
import { EngineError, EngineUnavailableError } from './engine.errors';
import type { HttpEndpoint, SyncEngine, TrainerWeightSource } from './distributed-sync';

/**
 * An engine's logprobs of the probe sequence differ from the trainer's beyond the tolerance after a weight
 * sync: it does not serve the policy the trainer holds (a broken transfer, a reload behind the run's back,
 * another dtype than declared). The message names the engine, the version, the worst token and both values.
 */
export class WeightProbeError extends EngineError {
  constructor(readonly result: WeightProbeResult) {
    const w = result.worst;
    super(
      'weight_probe_mismatch',
      `engine ${result.engineId}: after the ${result.sync} sync of policy version ${result.version} its logprobs of the probe differ from the trainer's by up to ${result.maxAbsDiff.toExponential(3)} ` +
        `(tolerance ${result.tolerance}; mean ${result.meanAbsDiff.toExponential(3)}); worst at probe position ${w.position}, token ${w.tokenId}: trainer ${w.trainer.toFixed(6)}, engine ${w.engine.toFixed(6)}. ` +
        'The engine does not serve the weights being trained (reloaded by something else, a failed transfer, or a dtype other than trainer.weightSync expects); set trainer.probeTolerance only if the difference is numeric noise',
      result.engineId,
    );
  }
}

/**
 * A vLLM server without the weight-transfer routes, or an SGLang server without the distributed-update
 * routes, while the run asks for `trainer.weightSync: distributed`. Raised at run start.
 */
export class WeightTransferUnsupportedError extends EngineError {
  constructor(engineId: string, route: string, fix: string) {
    super('weight_transfer_unsupported', `engine ${engineId} does not serve ${route} (HTTP 404), which trainer.weightSync: distributed needs: ${fix}`, engineId);
  }
}

/** The run config's probe tolerance, or the default for the engines' wire dtype: 1e-3 for fp32, 0.15 for bf16/fp16. */
export function defaultProbeTolerance(dtype: string, configured?: number): number {
  if (configured !== undefined) return configured;
  return dtype === 'float32' ? 1e-3 : 0.15;
}

/**
 * The fixed probe: `n` token ids spread over `[3, vocabSize)` by a multiplicative step (deterministic, no RNG,
 * so every step and every replay scores the same tokens; ids 0-2 are left out as the usual special tokens).
 */
export function probeTokens(vocabSize: number, n = 32): number[] {
  const span = Math.max(1, vocabSize - 3);
  return Array.from({ length: n }, (_, i) => 3 + ((i * 7919 + 104729) % span));
}

/**
 * Compare an engine's probe logprobs with the trainer's (same positions, 1..n-1 of `tokenIds`).
 * Pure; `passed` = the largest absolute difference is within `tolerance`.
 */
export function compareProbe(
  a: { engineId: string; sync: 'distributed' | 'disk'; version: number; tokenIds: number[]; trainer: number[]; engine: number[]; tolerance: number },
): WeightProbeResult {
  if (a.trainer.length !== a.engine.length || a.trainer.length !== a.tokenIds.length - 1) {
    throw new RangeError(`probe of ${a.tokenIds.length} tokens needs ${a.tokenIds.length - 1} logprobs on each side; trainer gave ${a.trainer.length}, engine ${a.engine.length}`);
  }
  let worst = 0;
  let sum = 0;
  for (let i = 0; i < a.trainer.length; i++) {
    const d = Math.abs(a.engine[i] - a.trainer[i]);
    sum += d;
    if (d > Math.abs(a.engine[worst] - a.trainer[worst])) worst = i;
  }
  const maxAbsDiff = Math.abs(a.engine[worst] - a.trainer[worst]);
  return {
    engineId: a.engineId, sync: a.sync, version: a.version, tokens: a.trainer.length, maxAbsDiff, meanAbsDiff: sum / a.trainer.length,
    worst: { position: worst + 1, tokenId: a.tokenIds[worst + 1], trainer: a.trainer[worst], engine: a.engine[worst] },
    tolerance: a.tolerance, passed: maxAbsDiff <= a.tolerance,
  };
}

/**
 * After a sync: the trainer's probe logprobs (of `policy` when given, else whatever it holds) against every
 * engine's. Returns every engine's result; @throws WeightProbeError for the first engine beyond tolerance
 * (after all were scored, so the results can still be logged by the caller from `error.result`).
 */
export async function runWeightProbe(
  o: { trainer: TrainerWeightSource; engines: readonly SyncEngine[]; version: number; sync: 'distributed' | 'disk'; tokenIds: number[]; tolerance: number; policy?: { runId: string; policyVersion: number } },
): Promise<WeightProbeResult[]> {
  const trainer = await o.trainer.probe(o.tokenIds, o.policy);
  const results = await Promise.all(o.engines.map(async (e) => {
    const t0 = performance.now();
    const engine = await e.transfer.promptLogprobs(o.tokenIds);
    return { ...compareProbe({ engineId: e.id, sync: o.sync, version: o.version, tokenIds: o.tokenIds, trainer, engine, tolerance: o.tolerance }), probeMs: performance.now() - t0 };
  }));
  const bad = results.find((r) => !r.passed);
  if (bad) throw new WeightProbeError(bad);
  return results;
}

/** The route each engine kind needs for `weightSync: distributed`, and the server setting that adds it. */
const ROUTES: Record<string, { path: string; fix: string }> = {
  sglang: { path: '/init_weights_update_group', fix: 'run an SGLang version with /init_weights_update_group and /update_weights_from_distributed (>= 0.4), or set trainer.weightSync: disk' },
  vllm: {
    path: '/init_weight_transfer_engine',
    fix: `start vLLM with VLLM_SERVER_DEV_MODE=1 and --weight-transfer-config '{"backend": "nccl"}' (the routes /init_weight_transfer_engine, /update_weights and /reset_prefix_cache exist only then), or set trainer.weightSync: disk`,
  },
};

/**
 * Run-start check for `weightSync: distributed`: POST the group route with an empty body — a server that has
 * it refuses the body (4xx other than 404), one without it answers 404. Nothing is joined.
 * @throws WeightTransferUnsupportedError naming the route and the server flag; EngineUnavailableError when the engine does not answer.
 */
export async function checkWeightTransferRoutes(engine: HttpEndpoint & { kind: string }): Promise<void> {
  const r = ROUTES[engine.kind];
  if (!r) throw new WeightTransferUnsupportedError(engine.id, 'a weight-update group', `engines of kind ${engine.kind} cannot join one; use sglang or vllm engines, or trainer.weightSync: disk`);
  let status: number;
  try {
    const res = await fetch(engine.url.replace(/\/+$/, '') + r.path, {
      method: 'POST', headers: { 'content-type': 'application/json', ...(engine.apiKey ? { authorization: `Bearer ${engine.apiKey}` } : {}) }, body: '{}',
      signal: AbortSignal.timeout(30_000),
    });
    status = res.status;
    await res.text();
  } catch (e) {
    throw new EngineUnavailableError(engine.id, `checking ${r.path}: ${(e as Error).message}`, e);
  }
  if (status === 404) throw new WeightTransferUnsupportedError(engine.id, r.path, r.fix);
}
