import { RstarError } from '@rstar/contracts';

/**
 * Base class of replay errors: `code` is machine-readable, `field` names the offending input (a CLI
 * flag, an event field) and the message says the fix.
 */
export class ReplayError extends RstarError {}

/** The log holds no event of the requested run. */
export class RunNotFoundError extends ReplayError {
  constructor(runId: string) {
    super('run_not_found', `no events of run "${runId}" in the log; list runs with \`rstar replay list\``, 'runId');
  }
}

/** The requested step, group or rollout is not in the run's log. */
export class NotInRunError extends ReplayError {
  constructor(what: 'step' | 'group' | 'rollout', id: string | number, runId: string, known: readonly (string | number)[]) {
    const sample = known.slice(0, 5).join(', ');
    super(
      `${what}_not_found`,
      `${what} ${id} is not in run ${runId}${known.length ? `; known: ${sample}${known.length > 5 ? `, ... (${known.length})` : ''}` : ''}`,
      what,
    );
  }
}

/** A recorded history file (JSON lines of events) that cannot be read; the message names the line. */
export class HistoryFileError extends ReplayError {
  constructor(message: string, field: string | null = null) {
    super('invalid_history', message, field);
  }
}

/** The events given to a replay function are of several runs (pass one run's events). */
export class MixedRunsError extends ReplayError {
  constructor(runIds: readonly string[]) {
    super('mixed_runs', `events of ${runIds.length} runs given (${runIds.slice(0, 3).join(', ')}); pass the events of one run`, 'events');
  }
}
