import { RstarError } from '@rstar/contracts';

/** An unknown run, step or rollout (HTTP 404). */
export class RunViewNotFoundError extends RstarError {
  constructor(
    readonly what: 'run' | 'step' | 'rollout',
    readonly id: string,
    hint: string,
  ) {
    super('not_found', `${what} ${id} not found: ${hint}`, what);
  }
}

/** A bad query argument (HTTP 400); the message names the field and what it accepts. */
export class RunViewQueryError extends RstarError {
  constructor(field: string, message: string) {
    super('invalid_query', `query "${field}": ${message}`, field);
  }
}
