import type { ExecResult as SandboxExecResult } from '@rstar/sandbox';
import type { PromptRenderer } from './prompt.renderer';

/**
 * Tokenizer port: the policy's tokenizer (the built-in policy's, or a real model's). `encode` must be
 * the inverse of `decode` on the text the agent loop appends (tool turns), so token ids and text agree.
 * `renderer`: the model's own conversation template, when it has one (the rStar2 template otherwise).
 */
export interface Tokenizer {
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  readonly renderer?: PromptRenderer;
}

/** Sampling parameters of one generation request; `maxNewTokens` is the remaining shared budget. */
export interface GenerateSampling {
  temperature: number;
  topP: number;
  seed: number;
  maxNewTokens: number;
  /** Extra stop strings; the end-of-turn token is the engine's own stop token. */
  stop?: readonly string[];
}

/** One generation request: the full context as token ids, and a request id (`<rolloutId>:<turn>`). */
export interface GenerateRequest {
  inputIds: readonly number[];
  sampling: GenerateSampling;
  rid: string;
}

/** Why a generation ended: end of turn / stop string, the token limit, aborted, or an engine error. */
export type GenerateFinishReason = 'stop' | 'length' | 'abort' | 'error';

/** A generated turn: new token ids, one sampling logprob per token, the decoded text. */
export interface GenerateResult {
  tokenIds: number[];
  logprobs: number[];
  text: string;
  finishReason: GenerateFinishReason;
  /** The weight version the engine reports it sampled with (SGLang `meta_info.weight_version`), when it reports one. */
  weightVersion?: string;
  /**
   * Set when a weight update interrupted the generation and it continued under the new weights (partial
   * rollouts): which policy version sampled which tokens, in token order, the first at token 0.
   */
  segments?: TurnSegment[];
}

/** Tokens `fromToken` .. (next segment's `fromToken` - 1) of a generation, sampled by `policyVersion`. */
export interface TurnSegment {
  fromToken: number;
  policyVersion: number;
  /** What the engine reported for that stretch, when it reports a weight version. */
  weightVersion?: string;
}

/**
 * What the agent loop generates with: one rollout's handle on the engine pool. Implementations keep
 * the rollout on one engine (prefix cache) and may move it to another engine when that one fails; the
 * loop resends the context up to its last completed turn, so a move is invisible to it.
 */
export interface EngineSession {
  generate(req: GenerateRequest): Promise<GenerateResult & { engineId: string }>;
}

/** The execution result of `@rstar/sandbox` (and of `ToolCallCompleted`). Times in milliseconds. */
export type ExecResult = SandboxExecResult;

/** One tool execution request; `session` is set for the stateful `jupyter_code` flavour (one per rollout). */
export interface ExecRequest {
  callId: string;
  rolloutId: string;
  turn: number;
  tool: string;
  code: string;
  input: string;
  session: string | null;
  timeoutMs: number;
  memoryMb: number;
}

/** Executes tool calls: the sandbox in-process, or tool-execution over the bus. */
export interface ToolExecutor {
  execute(req: ExecRequest): Promise<ExecResult>;
}
