import { RstarError } from '@rstar/contracts';

/** Base class of trainer-worker errors: `code` is the worker's (or ours), `field` the request field it names. */
export class TrainerWorkerError extends RstarError {}

/** The worker did not answer (connection refused, timeouts, 5xx) until the step's deadline. */
export class TrainerWorkerUnavailableError extends TrainerWorkerError {
  constructor(url: string, message: string) {
    super('trainer_worker_unavailable', `trainer worker ${url} unavailable: ${message}`, 'trainer.url');
  }
}

/** The step was trained before on another batch (HTTP 409 `step_conflict`): the message names both hashes. */
export class TrainerStepConflictError extends TrainerWorkerError {
  constructor(
    readonly runId: string,
    readonly step: number,
    readonly storedBatchHash: string,
    readonly sentBatchHash: string,
  ) {
    super(
      'step_conflict',
      `trainer worker refused step ${step} of run ${runId}: it was trained on batch ${storedBatchHash}, this batch is ${sentBatchHash} (the same step must always get the same batch; start a new run id to train another one)`,
      'batchHash',
    );
  }
}

/** The worker read another file than the hash says (HTTP 422 `batch_hash_mismatch`): both hashes named. */
export class BatchHashMismatchError extends TrainerWorkerError {
  constructor(
    readonly expected: string,
    readonly actual: string,
    batchUri: string,
  ) {
    super('batch_hash_mismatch', `trainer worker read ${batchUri} with sha256 ${actual}, the request says ${expected}; the batch file changed or is not the one written`, 'batchHash');
  }
}

/**
 * The worker refused the request or failed the step with a named error: `batch_invalid` (422, field named),
 * `policy_version_mismatch` (409), `invalid_request` (400), `model_dir_invalid`, `train_failed`, ...
 */
export class TrainerStepRejectedError extends TrainerWorkerError {
  constructor(code: string, message: string, field: string | null, readonly status: number | null) {
    super(code, `trainer worker: ${message}`, field);
  }
}

/** The worker's answer does not follow `rstar.grpo-result/1` (a version that does not follow, a missing field). */
export class TrainerResultError extends TrainerWorkerError {
  constructor(message: string, field: string) {
    super('trainer_result_invalid', `trainer worker result: ${message}`, field);
  }
}

/** The step did not finish before the deadline (`trainer.stepTimeoutS`). */
export class TrainerStepTimeoutError extends TrainerWorkerError {
  constructor(runId: string, step: number, seconds: number) {
    super('trainer_step_timeout', `trainer worker did not finish step ${step} of run ${runId} within ${seconds} s (raise trainer.stepTimeoutS)`, 'trainer.stepTimeoutS');
  }
}
