import { RstarError } from '@rstar/contracts';
/** A config `rstar train` will not run here (e.g. a 14B preset marked `validateOnly`), or a run refused at its start. */
/** The run waited too long for something it needs (a stage's consumers, a service's answer). */
export class RunWaitTimeoutError extends RstarError {
  constructor(what: string, timeoutMs: number) {
    super('run_wait_timeout', `timed out after ${timeoutMs} ms waiting for ${what}`);
  }
}

export class RunRefusedError extends RstarError {
  declare readonly field: string;
  constructor(message: string, field: string) {
    super('run_refused', message, field);
  }
}
