/** A config `rstar train` will not run here (e.g. a 14B preset marked `validateOnly`), or a run refused at its start. */
export class RunRefusedError extends Error {
  readonly code = 'run_refused';
  constructor(message: string, readonly field: string) {
    super(message);
    this.name = 'RunRefusedError';
  }
}
