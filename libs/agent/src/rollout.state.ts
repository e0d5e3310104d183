import { ids } from '@rstar/contracts';
import { InvalidRolloutRequestError, InvalidTurnError, RolloutStateError } from './agent.errors';
import type { ExecResult, GenerateFinishReason, Tokenizer, TurnSegment } from './ports';
import { JUPYTER_TOOL } from './template';
import { decodeFailureText, parseTurn } from './tool-call.parser';
import { formatToolResponse, resolveToolResponseLimits, truncateMiddle, type ToolResponseLimits } from './tool-response.formatter';
import { RSTAR2_RENDERER, type PromptRenderer } from './prompt.renderer';

/** Limits of one rollout (docs/design/protocol.md §2). */
export interface RolloutLimits {
  /** Shared budget of response tokens: model tokens plus tool-response tokens (prompt excluded). */
  maxTokens: number;
  /** Max assistant turns. */
  maxTurns: number;
  /** Tool calls executed per turn, the first ones in order (default 1, as rStar2). */
  maxParallelCalls?: number;
  /** Tool-response text limits (docs/design/protocol.md §3). */
  responseLimits?: Partial<ToolResponseLimits>;
}

/**
 * Why a rollout ended (the `finishReason` of `RolloutCompleted`); `context_exceeded` = the engine refused
 * the next turn because the context no longer fits its window (the rollout is truncated there).
 */
export type RolloutFinishReason = 'answer' | 'no_tool_call' | 'budget' | 'max_turns' | 'error' | 'context_exceeded';

/** One generated assistant turn, as `TurnGenerated` carries it. */
export interface TurnRecord {
  turn: number;
  tokenIds: number[];
  logprobs: number[];
  text: string;
  finishReason: GenerateFinishReason;
  engineId: string;
  /** The weight version the engine reported for this generation, when it reports one. */
  weightVersion?: string;
  /** Partial rollouts: the policy version of each stretch of the turn's tokens (see `GenerateResult.segments`). */
  segments?: TurnSegment[];
}

/** A tool call the loop executes (or answers itself, when it did not decode). */
export interface PendingToolCall {
  /** `call:<rolloutId>:<turn>:<index>` (deterministic, so a redelivered rollout re-requests the same id). */
  callId: string;
  turn: number;
  index: number;
  tool: string;
  code: string;
  input: string;
  /** The stateful session (the rollout id) for `jupyter_code`, else null. */
  session: string | null;
  /** Why the block did not decode; such a call is not executed. */
  decodeError: string | null;
}

/** A tool call with its outcome, in the order the model made them. */
export interface ToolCallRecord extends PendingToolCall {
  result: ExecResult | null;
  /** The text shown to the model inside `<tool_response>`. */
  responseText: string;
  erroneous: boolean;
}

/** The finished rollout: everything `RolloutCompleted` needs, plus the per-turn and per-call records. */
export interface RolloutOutcome {
  rolloutId: string;
  promptTokenIds: number[];
  /** Model and tool-response tokens after the prompt, in order. */
  responseTokenIds: number[];
  /** Sampling logprob per response token; 0 for tool-response tokens. */
  logprobs: number[];
  /** 1 = model token, 0 = tool-response token. */
  lossMask: (0 | 1)[];
  responseText: string;
  turns: number;
  toolCalls: number;
  toolErrors: number;
  answerBlocks: number;
  formatViolations: number;
  truncated: boolean;
  finishReason: RolloutFinishReason;
  /** Engine of the last turn ('' when no turn was generated). */
  engineId: string;
  turnRecords: TurnRecord[];
  toolCallRecords: ToolCallRecord[];
}

/** What to generate next: the whole context, the remaining budget, and the turn index. */
export interface NextGeneration {
  turn: number;
  inputIds: number[];
  maxNewTokens: number;
}

type Phase = 'generate' | 'tools' | 'done';

/**
 * The multi-turn rollout state machine (docs/design/protocol.md §2), pure: it never calls an engine or a tool. Drive
 * it with `next()` -> engine -> `applyTurn()` -> (tools) -> `applyToolResults()` until `done`.
 *
 * Rules: one shared token budget over model and tool-response tokens; each request asks for
 * `maxTokens - used`; a turn cut by the token limit ends the rollout as truncated (`budget`); a turn
 * without a tool call ends it (`answer` when the turn has a complete `<answer>` block, else
 * `no_tool_call`); after `maxTurns` turns the rollout ends (`max_turns`) without running that turn's
 * calls; a tool response that would leave no room for one more model token is not appended and the
 * rollout ends truncated, so the last token is always a model token. Loss mask: model 1, tool 0.
 */
export class RolloutStateMachine {
  private phase: Phase = 'generate';
  private readonly responseIds: number[] = [];
  private readonly logprobs: number[] = [];
  private readonly mask: (0 | 1)[] = [];
  private text = '';
  private readonly turnRecords: TurnRecord[] = [];
  private readonly callRecords: ToolCallRecord[] = [];
  private pending: PendingToolCall[] = [];
  private answerBlocks = 0;
  private formatViolations = 0;
  private truncated = false;
  private finish: RolloutFinishReason | null = null;
  private readonly maxParallelCalls: number;
  private readonly responseLimits: ToolResponseLimits;

  /**
   * @throws InvalidRolloutRequestError for a non-positive `maxTokens`/`maxTurns`/`maxParallelCalls`,
   *   an empty prompt, or bad response limits.
   */
  constructor(
    readonly rolloutId: string,
    private readonly promptIds: readonly number[],
    private readonly limits: RolloutLimits,
    private readonly tokenizer: Tokenizer,
    private readonly renderer: PromptRenderer = tokenizer.renderer ?? RSTAR2_RENDERER,
  ) {
    if (!Number.isInteger(limits.maxTokens) || limits.maxTokens <= 0) {
      throw new InvalidRolloutRequestError(`budget.maxTokens must be a positive integer, got ${limits.maxTokens}`, 'budget.maxTokens');
    }
    if (!Number.isInteger(limits.maxTurns) || limits.maxTurns <= 0) {
      throw new InvalidRolloutRequestError(`budget.maxTurns must be a positive integer, got ${limits.maxTurns}`, 'budget.maxTurns');
    }
    this.maxParallelCalls = limits.maxParallelCalls ?? 1;
    if (!Number.isInteger(this.maxParallelCalls) || this.maxParallelCalls <= 0) {
      throw new InvalidRolloutRequestError(`maxParallelCalls must be a positive integer, got ${this.maxParallelCalls}`, 'maxParallelCalls');
    }
    if (promptIds.length === 0) throw new InvalidRolloutRequestError('the prompt tokenised to no tokens; give a non-empty problem', 'problem');
    this.responseLimits = resolveToolResponseLimits(limits.responseLimits);
  }

  get done(): boolean {
    return this.phase === 'done';
  }

  /** Response tokens used so far (model + tool). */
  get used(): number {
    return this.responseIds.length;
  }

  /** The turn appended last (as stored: cut to the budget when the engine overran it). */
  get lastTurn(): TurnRecord | undefined {
    const t = this.turnRecords.at(-1);
    return t ? { ...t } : undefined;
  }

  /** The calls awaiting results (empty unless the machine is waiting for tools). */
  get pendingCalls(): readonly PendingToolCall[] {
    return this.pending;
  }

  /** The next generation request; `turn` is 0-based. @throws RolloutStateError unless a turn is due. */
  next(): NextGeneration {
    if (this.phase !== 'generate') throw new RolloutStateError(`next() called in phase ${this.phase}`);
    return { turn: this.turnRecords.length, inputIds: [...this.promptIds, ...this.responseIds], maxNewTokens: this.limits.maxTokens - this.used };
  }

  /**
   * Append a generated turn and decide what follows. Returns the tool calls to run now: decoded calls
   * are for the executor; calls with a `decodeError` are answered by the loop itself (pass `null` for
   * them to {@link applyToolResults}). An empty list means the rollout is done.
   * @throws InvalidTurnError when token ids and logprobs differ in length; RolloutStateError out of order.
   */
  applyTurn(gen: Omit<TurnRecord, 'turn'>): PendingToolCall[] {
    if (this.phase !== 'generate') throw new RolloutStateError(`applyTurn() called in phase ${this.phase}`);
    if (gen.tokenIds.length !== gen.logprobs.length) {
      throw new InvalidTurnError(`turn has ${gen.tokenIds.length} token ids but ${gen.logprobs.length} logprobs`, 'logprobs');
    }
    const remaining = this.limits.maxTokens - this.used;
    // An engine that ignores max_new_tokens must not break the budget: keep only what fits.
    const tokenIds = gen.tokenIds.slice(0, remaining);
    const logprobs = gen.logprobs.slice(0, remaining);
    const overran = tokenIds.length < gen.tokenIds.length;
    // The text is decoded from the ids, not taken from the engine: engines drop the end-of-turn token
    // (skip_special_tokens) and trim stop strings, and the rollout's text must match its tokens exactly.
    const text = this.tokenizer.decode(tokenIds);
    const turn = this.turnRecords.length;
    this.turnRecords.push({
      turn, tokenIds, logprobs, text, finishReason: overran ? 'length' : gen.finishReason, engineId: gen.engineId,
      ...(gen.weightVersion === undefined ? {} : { weightVersion: gen.weightVersion }),
      ...segmentsWithin(gen.segments, tokenIds.length),
    });
    this.responseIds.push(...tokenIds);
    this.logprobs.push(...logprobs);
    for (let i = 0; i < tokenIds.length; i++) this.mask.push(1);
    this.text += text;

    const parse = parseTurn(text);
    this.answerBlocks += parse.answerBlocks;
    this.formatViolations += parse.formatViolations;

    if (gen.finishReason === 'abort' || gen.finishReason === 'error') return this.end('error');
    if (overran || gen.finishReason === 'length' || this.used >= this.limits.maxTokens) {
      this.truncated = true;
      return this.end('budget');
    }
    if (parse.calls.length === 0) return this.end(parse.answerBlocks > 0 ? 'answer' : 'no_tool_call');
    if (turn + 1 >= this.limits.maxTurns) return this.end('max_turns');

    this.pending = parse.calls.slice(0, this.maxParallelCalls).map((c) => ({
      callId: ids.toolCall(this.rolloutId, turn, c.index),
      turn,
      index: c.index,
      tool: c.ok ? c.tool : 'invalid',
      code: c.ok ? c.code : '',
      input: c.ok ? c.input : '',
      session: c.ok && c.tool === JUPYTER_TOOL ? this.rolloutId : null,
      decodeError: c.ok ? null : c.reason,
    }));
    this.phase = 'tools';
    return this.pending;
  }

  /**
   * Append the tool results of the pending calls (same order; `null` for calls with a decode error)
   * as one user turn, or end the rollout truncated when that turn would not leave room for one more
   * model token. @throws RolloutStateError when not waiting for tools or on a count/decode mismatch.
   */
  applyToolResults(results: readonly (ExecResult | null)[]): void {
    if (this.phase !== 'tools') throw new RolloutStateError(`applyToolResults() called in phase ${this.phase}`);
    if (results.length !== this.pending.length) {
      throw new RolloutStateError(`expected ${this.pending.length} tool results, got ${results.length}`);
    }
    const texts: string[] = [];
    this.pending.forEach((call, i) => {
      const result = results[i];
      if ((call.decodeError === null) !== (result !== null)) {
        throw new RolloutStateError(`tool result ${i} (${call.callId}) must be ${call.decodeError === null ? 'an ExecResult' : 'null (decode error)'}`);
      }
      const l = this.responseLimits;
      const responseText =
        result === null
          ? truncateMiddle(decodeFailureText(call.decodeError ?? ''), l.maxChars, l.headChars, l.tailChars)
          : formatToolResponse(result, l);
      this.callRecords.push({ ...call, result, responseText, erroneous: result === null || result.status !== 'ok' });
      texts.push(responseText);
    });
    this.pending = [];
    const toolText = this.renderer.renderToolTurn(texts);
    const toolIds = this.tokenizer.encode(toolText);
    if (this.used + toolIds.length >= this.limits.maxTokens) {
      this.truncated = true;
      this.end('budget');
      return;
    }
    this.responseIds.push(...toolIds);
    for (let i = 0; i < toolIds.length; i++) {
      this.logprobs.push(0);
      this.mask.push(0);
    }
    this.text += toolText;
    this.phase = 'generate';
  }

  /**
   * End the rollout truncated because the engine refused the next turn (context window exceeded): what
   * was generated so far is kept, so the last token is a tool-response token when a tool turn preceded.
   * @throws RolloutStateError unless a turn is due.
   */
  endContextExceeded(): void {
    if (this.phase !== 'generate') throw new RolloutStateError(`endContextExceeded() called in phase ${this.phase}`);
    this.truncated = true;
    this.end('context_exceeded');
  }

  /** End the rollout early (engine or executor failure). */
  fail(): void {
    this.pending = [];
    this.end('error');
  }

  /** The finished rollout. @throws RolloutStateError before the rollout is done. */
  outcome(): RolloutOutcome {
    if (this.phase !== 'done' || this.finish === null) throw new RolloutStateError('outcome() called before the rollout is done');
    return {
      rolloutId: this.rolloutId,
      promptTokenIds: [...this.promptIds],
      responseTokenIds: [...this.responseIds],
      logprobs: [...this.logprobs],
      lossMask: [...this.mask],
      responseText: this.text,
      turns: this.turnRecords.length,
      toolCalls: this.callRecords.length,
      toolErrors: this.callRecords.filter((c) => c.erroneous).length,
      answerBlocks: this.answerBlocks,
      formatViolations: this.formatViolations,
      truncated: this.truncated,
      finishReason: this.finish,
      engineId: this.turnRecords.at(-1)?.engineId ?? '',
      turnRecords: this.turnRecords.map((t) => ({ ...t })),
      toolCallRecords: this.callRecords.map((c) => ({ ...c })),
    };
  }

  private end(reason: RolloutFinishReason): PendingToolCall[] {
    this.finish = reason;
    this.phase = 'done';
    return [];
  }
}

/** The segments that start inside the kept `n` tokens (a turn cut to the budget loses the later ones); absent stays absent. */
function segmentsWithin(segments: readonly TurnSegment[] | undefined, n: number): { segments?: TurnSegment[] } {
  if (!segments?.length) return {};
  return { segments: segments.filter((s) => s.fromToken < n || s.fromToken === 0).map((s) => ({ ...s })) };
}
