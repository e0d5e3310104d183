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
