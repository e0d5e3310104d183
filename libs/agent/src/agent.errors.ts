import { RstarError } from '@rstar/contracts';

/** Base class of agent-loop errors; `code` is machine-readable, `field` names the offending input. */
export class AgentError extends RstarError {}

/** A rollout request or option that cannot be used (e.g. a non-positive budget). */
export class InvalidRolloutRequestError extends AgentError {
  constructor(message: string, field: string) {
    super('invalid_rollout_request', message, field);
  }
}

/** The state machine was driven out of order (e.g. a turn applied while tool results are awaited). */
export class RolloutStateError extends AgentError {
  constructor(message: string) {
    super('rollout_state', message);
  }
}

/** The engine gave a turn that cannot be appended (logprobs and token ids of different lengths). */
export class InvalidTurnError extends AgentError {
  constructor(message: string, field: string) {
    super('invalid_turn', message, field);
  }
}

/**
 * The engine refused a generation because the context (prompt + response so far + new tokens) does not
 * fit its context window (an HTTP 400 "context length exceeded" on SGLang/vLLM). Engine sessions throw
 * it; {@link runRollout} ends the rollout truncated with finish reason `context_exceeded` instead of
 * failing it, so its group still completes.
 */
export class ContextExceededError extends AgentError {
  constructor(message: string, readonly engineId: string = '') {
    super('context_exceeded', message, 'budget.maxTokens');
  }
}
