import { RstarError } from '@rstar/contracts';

/**
 * The events being folded contradict each other (e.g. a group names a step whose row the batch did not
 * load): the projector stops at that batch and retries instead of writing a wrong row.
 */
export class ProjectionInconsistentError extends RstarError {
  constructor(message: string) {
    super('projection_inconsistent', message);
  }
}
