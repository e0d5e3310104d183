import type { GenerateRequest, GenerateResult } from '@rstar/agent';

/** What an engine reports about itself: KV-cache capacity in tokens (PROTOCOL §7). */
export interface ServerInfo {
  kvCapacityTokens: number;
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
  /** Load new weights from a checkpoint path the engine can read. */
  updateWeights(path: string): Promise<void>;
  /** Drop the prefix cache (after a weight update its entries are stale). */
  flushCache(): Promise<void>;
  /** True when the engine answers its health endpoint. */
  health(): Promise<boolean>;
}
