import { RstarError } from '@rstar/contracts';

/** Base class of built-in policy errors; `code` is machine-readable, `field` names the offending input. */
export class PolicyError extends RstarError {}

/** A bad argument (shape, range, config); the message names the field and the fix. */
export class PolicyInputError extends PolicyError {
  constructor(message: string, field: string | null) {
    super('invalid_policy_input', message, field);
  }
}

/** A sequence longer than the model's context window. */
export class ContextOverflowError extends PolicyError {
  constructor(length: number, context: number, field: string) {
    super('context_overflow', `${field}: sequence of ${length} tokens exceeds the model context of ${context} (shorten it or use a larger model.context)`, field);
  }
}

/** A checkpoint directory that is missing, incomplete or fails its content hash. */
export class CheckpointError extends PolicyError {
  constructor(message: string, field: string | null = 'checkpointDir') {
    super('invalid_checkpoint', message, field);
  }
}
