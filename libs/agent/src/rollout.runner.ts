import { ContextExceededError, InvalidRolloutRequestError } from './agent.errors';
import type { EngineSession, ExecResult, Tokenizer, ToolExecutor } from './ports';
import { RolloutStateMachine, type PendingToolCall, type RolloutLimits, type RolloutOutcome, type TurnRecord } from './rollout.state';
import { RSTAR2_RENDERER, type PromptRenderer } from './prompt.renderer';

/** One rollout to run: the problem (or a pre-rendered prompt), sampling and budget. */
export interface RolloutSpec {
  rolloutId: string;
  problem: string;
  sampling: { temperature: number; topP: number; seed: number };
  budget: { maxTokens: number; maxTurns: number };
  /** Tool listed in the system prompt; the model may call either flavour. Default python. */
  tool?: string;
  /** Drop the system prompt (the tiny built-in policy, docs/design/protocol.md §1 note in template.ts). */
  compactPrompt?: boolean;
  /** Use this prompt text instead of rendering `problem` with the template. */
  promptText?: string;
}

/** Loop options: tool limits (docs/design/protocol.md §3 defaults) and state-machine options. */
export interface RolloutOptions extends Pick<RolloutLimits, 'maxParallelCalls' | 'responseLimits'> {
  /** Wall-clock limit per tool call in ms (default 4000). */
  toolTimeoutMs?: number;
  /** Address-space limit per tool call in MB (default 384). */
  toolMemoryMb?: number;
}

/** What the loop needs: the engine session, the tool executor, the tokenizer, and optional hooks. */
export interface RolloutDeps {
  engine: EngineSession;
  tools: ToolExecutor;
  tokenizer: Tokenizer;
  /** The conversation template (default: the tokenizer's own, else the built-in rStar2 one). */
  renderer?: PromptRenderer;
  /** Milliseconds clock (default `Date.now`), for the rollout's wall time. */
  clock?: () => number;
  /** Called after each generated turn is appended, before its tool calls run (e.g. to emit `TurnGenerated`). */
  onTurn?: (turn: TurnRecord) => Promise<void> | void;
  /**
   * Turns an earlier attempt of this rollout already recorded (a redo after a crash). A turn found here is
   * appended as recorded instead of generated, and not reported through `onTurn` again, so the redo
   * continues the recorded rollout (same text, same tool calls) instead of sampling a different one.
   */
  recorded?: (turn: number) => TurnRecord | undefined;
  /** Called with each tool call and its result (null for decode failures) once it is done. */
  onToolResult?: (call: PendingToolCall, result: ExecResult | null) => Promise<void> | void;
}

/** A finished rollout with its wall time in ms. */
export interface RolloutResult extends RolloutOutcome {
  wallMs: number;
}

/**
 * Run one multi-turn tool-integrated rollout (docs/design/protocol.md §1-3) with {@link RolloutStateMachine}. The calls
 * of a turn run concurrently the moment the turn is parsed; other rollouts are never held up (each
 * rollout is its own async chain). Errors of the engine session or the executor propagate (the caller
 * decides to retry the rollout or to fail it), except {@link ContextExceededError}, which ends the rollout
 * truncated with finish reason `context_exceeded`; the state machine's own errors are bugs.
 * @throws InvalidRolloutRequestError for a bad spec (empty problem, non-positive budget).
 */
export async function runRollout(spec: RolloutSpec, deps: RolloutDeps, opts: RolloutOptions = {}): Promise<RolloutResult> {
  const clock = deps.clock ?? Date.now;
  const started = clock();
  if (spec.promptText === undefined && spec.problem.trim() === '') {
    throw new InvalidRolloutRequestError('problem is empty; give the problem text', 'problem');
  }
  const renderer = deps.renderer ?? deps.tokenizer.renderer ?? RSTAR2_RENDERER;
  const promptText = spec.promptText ?? renderer.renderPrompt(spec.problem, { tools: spec.tool ? [spec.tool] : undefined, compact: spec.compactPrompt });
  const sm = new RolloutStateMachine(
    spec.rolloutId,
    deps.tokenizer.encode(promptText),
    { ...spec.budget, maxParallelCalls: opts.maxParallelCalls, responseLimits: opts.responseLimits },
    deps.tokenizer,
    renderer,
  );
  const timeoutMs = opts.toolTimeoutMs ?? 4000;
  const memoryMb = opts.toolMemoryMb ?? 384;
  const runCalls = (calls: readonly PendingToolCall[]) =>
    Promise.all(
      calls.map(async (c) => {
        const r =
          c.decodeError !== null
            ? null
            : await deps.tools.execute({ callId: c.callId, rolloutId: spec.rolloutId, turn: c.turn, tool: c.tool, code: c.code, input: c.input, session: c.session, timeoutMs, memoryMb });
        await deps.onToolResult?.(c, r);
        return r;
      }),
    );
  while (!sm.done) {
    const next = sm.next();
    const prior = deps.recorded?.(next.turn);
    if (prior) {
      const calls = sm.applyTurn(prior);
      if (calls.length === 0) break;
      sm.applyToolResults(await runCalls(calls));
      continue;
    }
    let gen;
    try {
      gen = await deps.engine.generate({
        inputIds: next.inputIds,
        sampling: { ...spec.sampling, maxNewTokens: next.maxNewTokens },
        rid: `${spec.rolloutId}:${next.turn}`,
      });
    } catch (e) {
      // A context the engine cannot hold will not fit on a retry either: the rollout ends truncated here
      // (and is graded like any truncated one) rather than failing, so its group still completes.
      if (!(e instanceof ContextExceededError)) throw e;
      sm.endContextExceeded();
      break;
    }
    const calls = sm.applyTurn(gen);
    const turn = sm.lastTurn;
    if (turn) await deps.onTurn?.(turn);
    if (calls.length === 0) break;
    sm.applyToolResults(await runCalls(calls));
  }
  return { ...sm.outcome(), wallMs: clock() - started };
}
