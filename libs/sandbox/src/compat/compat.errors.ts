import type { z } from 'zod';
import { InvalidRequestError } from '../sandbox.errors';

/**
 * The first problem zod found in a drop-in request, as the sandbox's typed error naming the field
 * (dotted path, e.g. `submissions.3.solution`) and what it must be.
 */
export function invalidFromZod(error: z.ZodError, hint: string): InvalidRequestError {
  const issue = error.issues[0];
  const field = issue?.path.length ? issue.path.map(String).join('.') : 'request';
  return new InvalidRequestError(field, `${issue?.message ?? 'invalid'}; ${hint}`);
}
