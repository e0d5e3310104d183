import {
  BatchHashMismatchError, TrainerResultError, TrainerStepConflictError, TrainerStepRejectedError, TrainerStepTimeoutError, TrainerWorkerUnavailableError,
} from './trainer-worker.errors';

/** `PUT /v1/runs/{runId}/steps/{step}` body (workers/trainer/README.md). */
export interface StepRequest {
  batchUri: string;
  batchHash: string;
  policyVersion: number;
  mode: 'grpo' | 'sft';
  loss?: Record<string, unknown>;
  optimizer?: Record<string, unknown>;
  checkpointDir?: string | null;
  initFrom?: string | null;
  /**
   * Sharded checkpoints and retention (workers/trainer/rstar_trainer/checkpoints.py): sharded model + optimizer
   * every `every` trained steps, `keepLast` of them and of the per-step exports kept, milestone exports every
   * `exportEvery` steps and at the `final` step kept for good. Absent = every version kept in full.
   */
  checkpoints?: { every: number; keepLast: number | null; exportEvery: number | null; final: boolean };
}

/** The `rstar.grpo-result/1` result of a finished step (the fields rstar uses). */
export interface StepResult {
  protocol: 'rstar.grpo-result/1';
  state: 'done';
  runId: string;
  step: number;
  mode: 'grpo' | 'sft';
  batchHash: string;
  policyVersion: number;
  newPolicyVersion: number;
  loss: number;
  clipFraction: number | null;
  dualClipFraction: number | null;
  approxKl: number | null;
  entropy: number | null;
  gradNorm: number;
  updates: number;
  lr: number;
  tokens: number;
  sequences: number;
  logprobDrift: { tokens: number; meanAbs: number; maxAbs: number; mismatchKl: number; ratioMin: number; ratioMax: number } | null;
  /** Decoupled PPO / TIS behaviour weights (cap null = uncapped decoupled PPO); null when off. */
  tis: { cap: number | null; meanWeight: number; cappedFraction: number } | null;
  checkpoint: { uri: string; hash: string; tokenizerHash: string };
  attempts: number;
  trainSeconds: number;
  stepSeconds: number;
}

/** `GET /v1/info` (the fields rstar uses). */
export interface WorkerInfo {
  model: string;
  parameters: number;
  vocabSize: number;
  tokenizerHash: string;
  device: string;
  dtype: string;
  worldSize: number;
  torch: string;
}

interface ErrorBody {
  error?: { code?: string; message?: string; field?: string; storedBatchHash?: string; sentBatchHash?: string; expected?: string; actual?: string };
}

/** Options of {@link TrainerWorkerClient}. */
export interface TrainerWorkerClientOptions {
  /** Seconds a long-poll GET waits (default 60; the worker caps it at 300). */
  pollS?: number;
  /** Back-off between attempts while the worker is unreachable, in ms (default 250 doubling to 5000). */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Called when the worker is unreachable and the client keeps trying (e.g. it is restarting). */
  onRetry?: (message: string) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * HTTP client of the trainer worker (workers/trainer): PUT a step, long-poll its result, read `/v1/info`.
 * Network failures and 5xx answers are retried with back-off until the caller's deadline (a worker that
 * restarts after a crash re-queues its accepted steps and answers again); the worker's named errors become
 * typed errors ({@link TrainerStepConflictError}, {@link BatchHashMismatchError}, {@link TrainerStepRejectedError}).
 */
export class TrainerWorkerClient {
  readonly url: string;

  constructor(url: string, private readonly opts: TrainerWorkerClientOptions = {}) {
    this.url = url.replace(/\/+$/, '');
  }

  /** `GET /v1/info`. @throws TrainerWorkerUnavailableError when it does not answer by `deadline` (ms epoch; default 30 s). */
  async info(deadline = Date.now() + 30_000): Promise<WorkerInfo> {
    const r = await this.request('GET', '/v1/info', undefined, deadline);
    if (r.status !== 200) throw new TrainerStepRejectedError(`http_${r.status}`, `GET /v1/info answered HTTP ${r.status}`, null, r.status);
    return r.body as WorkerInfo;
  }

  /**
   * Train step `step` of worker run `runId` and resolve with its result: PUT the request, then long-poll
   * until the step is done. The same step with the same batch returns the stored result (the worker trains
   * each step once). @throws the typed errors above; TrainerStepTimeoutError after `timeoutMs`.
   */
  async trainStep(runId: string, step: number, req: StepRequest, timeoutMs: number): Promise<StepResult> {
    const path = `/v1/runs/${encodeURIComponent(runId)}/steps/${step}`;
    const deadline = Date.now() + timeoutMs;
    let put = true;
    for (;;) {
      if (Date.now() > deadline) throw new TrainerStepTimeoutError(runId, step, Math.round(timeoutMs / 1000));
      const r = put
        ? await this.request('PUT', path, req, deadline)
        : await this.request('GET', `${path}?wait=${Math.max(1, Math.min(this.opts.pollS ?? 60, Math.floor((deadline - Date.now()) / 1000)))}`, undefined, deadline);
      if (r.status === 200) {
        const body = r.body as StepResult | { state: 'failed'; error: { code: string; message: string; field?: string; status?: number } };
        if (body.state === 'failed') {
          const e = (body as { error: { code: string; message: string; field?: string; status?: number } }).error;
          throw new TrainerStepRejectedError(e.code, e.message, e.field ?? null, e.status ?? null);
        }
        return checkResult(body as StepResult, runId, step, req);
      }
      if (r.status === 202) {
        put = false;
        continue;
      }
      // The worker lost the step (a new state directory): send it again.
      if (r.status === 404 && !put) {
        put = true;
        continue;
      }
      throw this.rejected(r.status, r.body as ErrorBody, req, runId, step);
    }
  }

  private rejected(status: number, body: ErrorBody, req: StepRequest, runId: string, step: number): Error {
    const e = body?.error ?? {};
    if (e.code === 'step_conflict') return new TrainerStepConflictError(runId, step, e.storedBatchHash ?? '?', e.sentBatchHash ?? req.batchHash);
    if (e.code === 'batch_hash_mismatch') return new BatchHashMismatchError(e.expected ?? req.batchHash, e.actual ?? '?', req.batchUri);
    return new TrainerStepRejectedError(e.code ?? `http_${status}`, e.message ?? `HTTP ${status}`, e.field ?? null, status);
  }

  /** One JSON request, retried on network errors and 5xx until `deadline`. Returns status and parsed body. */
  private async request(method: 'GET' | 'PUT', path: string, body: unknown, deadline: number): Promise<{ status: number; body: unknown }> {
    let wait = this.opts.retryBaseMs ?? 250;
    for (let attempt = 1; ; attempt++) {
      let why: string;
      try {
        const res = await fetch(this.url + path, {
          method,
          headers: body === undefined ? undefined : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(Math.max(1_000, Math.min(deadline - Date.now(), 330_000))),
        });
        const text = await res.text();
        if (res.status < 500) {
          try {
            return { status: res.status, body: text ? JSON.parse(text) : null };
          } catch {
            throw new TrainerStepRejectedError('trainer_bad_response', `${method} ${path} answered HTTP ${res.status} with non-JSON: ${text.slice(0, 200)}`, null, res.status);
          }
        }
        why = `HTTP ${res.status}: ${text.slice(0, 200)}`;
      } catch (e) {
        if (e instanceof TrainerStepRejectedError) throw e;
        why = `${(e as Error).message}${(e as { cause?: { code?: string } }).cause?.code ? ` (${(e as { cause: { code: string } }).cause.code})` : ''}`;
      }
      if (Date.now() + wait > deadline) throw new TrainerWorkerUnavailableError(this.url, `${method} ${path} failed ${attempt} times, last: ${why}`);
      this.opts.onRetry?.(`${method} ${path}: ${why}; retrying in ${wait} ms`);
      await sleep(wait);
      wait = Math.min(this.opts.retryMaxMs ?? 5_000, wait * 2);
    }
  }
}

/** Check a result against what was asked. @throws TrainerResultError naming the field. */
function checkResult(r: StepResult, runId: string, step: number, req: StepRequest): StepResult {
  if (r.protocol !== 'rstar.grpo-result/1') throw new TrainerResultError(`protocol is ${String(r.protocol)}, expected rstar.grpo-result/1`, 'protocol');
  if (r.runId !== runId || r.step !== step) throw new TrainerResultError(`answers run ${r.runId} step ${r.step}, asked ${runId} step ${step}`, 'step');
  if (r.batchHash !== req.batchHash) throw new TrainerResultError(`is for batch ${r.batchHash}, asked ${req.batchHash}`, 'batchHash');
  if (r.newPolicyVersion !== req.policyVersion + 1) throw new TrainerResultError(`new policy version ${r.newPolicyVersion} does not follow ${req.policyVersion}`, 'newPolicyVersion');
  if (!r.checkpoint?.uri || !/^[0-9a-f]{64}$/.test(r.checkpoint.hash ?? '')) throw new TrainerResultError('has no checkpoint uri and sha256 hash', 'checkpoint');
  if (!Number.isFinite(r.loss)) throw new TrainerResultError(`loss is ${r.loss}`, 'loss');
  return r;
}
