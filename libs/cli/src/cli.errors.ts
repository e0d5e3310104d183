import { RstarError } from '@rstar/contracts';

/** The first `--flag` a message starts with (`--seed must be ...` -> `--seed`), or null. */
function flagOf(message: string): string | null {
  return /^(--[a-z][a-z-]*)/.exec(message)?.[1] ?? null;
}

/**
 * An option value or input the CLI refuses (code `invalid_cli_input`): `field` names the flag (taken from
 * the message when it starts with one) or the input, and the message says the fix. `main` prints the
 * message and exits with code 1.
 */
export class CliInputError extends RstarError {
  constructor(message: string, field: string | null = flagOf(message)) {
    super('invalid_cli_input', message, field);
  }
}

/** The archive or history holds no event of the requested run (code `run_not_found`, field `runId`). */
export class RunEventsNotFoundError extends RstarError {
  constructor(message: string) {
    super('run_not_found', message, 'runId');
  }
}
