import { RstarError, type RstarErrorOptions } from '@rstar/contracts';
/** Machine-readable reasons a grader operation refused or failed. */
export type GraderErrorCode =
  | 'unparseable'
  | 'refused_huge'
  | 'division_by_zero'
  | 'unsupported'
  | 'invalid_input'
  | 'backend_failed'
  | 'timeout';

/** A typed grader failure. Inside `grade` every such error ends as a `false` verdict (fail closed, rule 10). */
export class GraderError extends RstarError {
  declare readonly code: GraderErrorCode;
  constructor(code: GraderErrorCode, message: string, options: RstarErrorOptions = {}) {
    super(code, message, null, options);
  }
}
