import { RstarError } from '@rstar/contracts';

/** No Python environment for workers/ (made by `bash workers/setup.sh`). */
export class WorkersEnvMissingError extends RstarError {
  constructor(where: string) {
    super('workers_env_missing', `no Python environment for the trainer worker at ${where}: run \`bash workers/setup.sh\` (or set RSTAR_WORKERS_PYTHON)`, 'RSTAR_WORKERS_PYTHON');
  }
}

/**
 * A worker process (trainer worker, reference engine, make-tiny) that exited instead of starting. `code` is
 * the worker's own error code when it printed one (`model_dir_invalid`, `tokenizer_missing`, ...), else
 * `worker_exited`; the message carries the tail of its output.
 */
export class WorkerProcessError extends RstarError {
  constructor(
    code: string,
    message: string,
    field: string | null,
    readonly exitCode: number | null,
  ) {
    super(code, message, field);
  }
}
