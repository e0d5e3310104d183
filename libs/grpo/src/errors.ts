import { RstarError } from '@rstar/contracts';

/**
 * An input the GRPO math cannot work with (a negative count, more errors than calls, G < 1, ...).
 * `code` is machine-readable, `field` names the offending input path; the message says the fix.
 */
export class GrpoInputError extends RstarError {
  declare readonly field: string;
  constructor(message: string, field: string) {
    super('grpo_invalid_input', message, field);
  }
}

/** Throw a {@link GrpoInputError} unless `v` is a non-negative integer. */
export function requireCount(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw new GrpoInputError(`${field} must be a non-negative integer, got ${String(v)}`, field);
  }
  return v;
}
