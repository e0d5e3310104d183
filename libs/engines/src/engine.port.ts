import type { GenerateRequest, GenerateResult } from '@rstar/agent';
import type { EngineLoadSample } from './engine-load';
import type { WeightTransfer } from './distributed-sync';

/** What an engine reports about itself: KV-cache capacity in tokens (docs/design/protocol.md §7). */
export interface ServerInfo {
  kvCapacityTokens: number;
}

/**
 * The weights an engine reports it holds: its weight version (SGLang `weight_version`; the builtin engine
 * reports its checkpoint's content hash there) and the sha256 of the checkpoint's manifest.json (the
 * reference engine verifies and reports it; real SGLang does not: null). Null fields = not reported.
 */
export interface LoadedWeights {
  weightVersion: string | null;
  manifestHash: string | null;
}

/** The model an engine serves: its path, and the tokenizer hash when the engine reports one (workers/trainer's recipe). */
export interface ModelInfo {
  modelPath: string | null;
  tokenizerHash: string | null;
}

/**
 * One inference engine behind its native HTTP API. Token ids in, token ids and sampling logprobs out,
 * so the text the policy is trained on is exactly the text it generated.
 */
export interface EngineAdapter {
  readonly id: string;
  readonly kind: string;
  serverInfo(): Promise<ServerInfo>;
  /**
   * Generate one turn. @throws EngineUnavailableError after retries when the engine does not answer;
   * EngineResponseError for an answer it cannot use. `signal` aborts the HTTP request (the adapter then
   * also asks the engine to abort `rid`).
   */
  generate(req: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult>;
  /** Abort an in-flight request by id (best effort). */
  abort(rid: string): Promise<void>;
  /**
   * Load new weights from a checkpoint path the engine can read, tagged with `version` (sent as SGLang's
   * `weight_version`). Resolves with what the engine reports holding afterwards (void: it reports nothing).
   */
  updateWeights(path: string, opts?: { version?: number }): Promise<LoadedWeights | void>;
  /** What the engine reports holding now (SGLang `GET /get_weight_version`); absent = it cannot tell. */
  loadedWeights?(): Promise<LoadedWeights>;
  /** The model the engine serves (SGLang `GET /get_model_info`); absent = it cannot tell. */
  modelInfo?(): Promise<ModelInfo>;
  /**
   * The engine's KV usage and retraction counter now (its `GET /metrics`, {@link EngineLoadSample}); null
   * when it exposes neither; absent = the adapter cannot tell. The `kv-adaptive` policy admits by it.
   */
  loadStats?(): Promise<EngineLoadSample | null>;
  /** Weight transfer over torch.distributed and prompt logprobs (SGLang, vLLM); absent = disk only. */
  weightTransfer?(): WeightTransfer;
  /**
   * Run-start check that the server serves the weight-transfer routes (`weightSync: distributed`).
   * @throws WeightTransferUnsupportedError naming the route and the server flag that adds it.
   */
  checkWeightTransfer?(): Promise<void>;
  /** Drop the prefix cache (after a weight update its entries are stale). */
  flushCache(): Promise<void>;
  /** True when the engine answers its health endpoint. */
  health(): Promise<boolean>;
}
