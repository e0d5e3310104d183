import type { GenerationResult, GenerateOptions, PolicyModel } from '@rstar/policy';
import { EngineOverloadedError, KvCapacityError } from './builtin-engine.errors';

/** One generation request as the scheduler sees it. */
export interface ScheduledRequest {
  rid: string;
  inputIds: number[];
  sampling: Omit<GenerateOptions, 'isAborted' | 'yieldEveryStep'>;
}

interface Pending extends ScheduledRequest {
  reserve: number;
  aborted: boolean;
  resolve: (r: GenerationResult) => void;
  reject: (e: unknown) => void;
}

/** Scheduler counters for `/metrics` and `/get_server_info`. */
export interface SchedulerStats {
  running: number;
  queued: number;
  kvTokensInUse: number;
  kvCapacityTokens: number;
  generatedTokens: number;
  batches: number;
  /** Decode steps run so far (all batches): progress of a generation in flight. */
  decodeSteps: number;
}

/**
 * Batches concurrent requests for the single model: requests arriving within `batchWindowMs` run as one
 * batched KV-cache generation. Every request reserves `prompt + max_new_tokens` KV tokens (capped by the
 * context window); a batch admits queued requests in FIFO order while they fit in the capacity, the rest wait
 * for the next batch — nothing is evicted. A request larger than the whole capacity is rejected.
 */
export class GenerationScheduler {
  private queue: Pending[] = [];
  private running: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private busy: Promise<void> | null = null;
  private paused = 0;
  private generated = 0;
  private batches = 0;
  private decodeSteps = 0;

  constructor(
    private model: PolicyModel,
    readonly kvCapacityTokens: number,
    private readonly opts: { batchWindowMs?: number; maxBatch?: number; queueLimit?: number } = {},
  ) {}

  /** KV tokens a request reserves. */
  reservation(inputLen: number, maxNewTokens: number): number {
    return inputLen + Math.max(0, Math.min(maxNewTokens, this.model.config.context - inputLen));
  }

  /** Queue a request; resolves with its generation (finishReason 'abort' when aborted). Throws {@link KvCapacityError}, {@link EngineOverloadedError}. */
  submit(req: ScheduledRequest): Promise<GenerationResult> {
    this.model.checkSequences([req.inputIds], 'input_ids');
    const reserve = this.reservation(req.inputIds.length, req.sampling.maxNewTokens ?? 64);
    if (reserve > this.kvCapacityTokens) throw new KvCapacityError(reserve, this.kvCapacityTokens);
    if (this.queue.length >= (this.opts.queueLimit ?? 4096)) throw new EngineOverloadedError(this.opts.queueLimit ?? 4096);
    return new Promise<GenerationResult>((resolve, reject) => {
      this.queue.push({ ...req, reserve, aborted: false, resolve, reject });
      this.schedule();
    });
  }

  /** Abort by request id (queued: answered at once; running: stops at the next decode step). Returns whether it was found. */
  abort(rid: string): boolean {
    const q = this.queue.findIndex((p) => p.rid === rid);
    if (q >= 0) {
      const [p] = this.queue.splice(q, 1);
      p.resolve({ tokenIds: [], logprobs: [], finishReason: 'abort', matchedStop: null });
      return true;
    }
    const r = this.running.find((p) => p.rid === rid);
    if (r) r.aborted = true;
    return r !== undefined;
  }

  /** Abort everything queued and running. */
  abortAll(): void {
    for (const p of [...this.queue]) this.abort(p.rid);
    for (const p of this.running) p.aborted = true;
  }

  stats(): SchedulerStats {
    return {
      running: this.running.length, queued: this.queue.length, kvTokensInUse: this.running.reduce((a, p) => a + p.reserve, 0),
      kvCapacityTokens: this.kvCapacityTokens, generatedTokens: this.generated, batches: this.batches, decodeSteps: this.decodeSteps,
    };
  }

  /** Run `fn` between batches (e.g. a weight reload): waits for the running batch, holds new ones until `fn` settles. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    this.paused++;
    try {
      while (this.busy) await this.busy;
      return await fn();
    } finally {
      this.paused--;
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.timer || this.busy || this.paused || this.queue.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.busy = this.runBatch().finally(() => {
        this.busy = null;
        this.schedule();
      });
    }, this.opts.batchWindowMs ?? 5);
  }

  private async runBatch(): Promise<void> {
    const maxBatch = this.opts.maxBatch ?? 64;
    let free = this.kvCapacityTokens;
    const batch: Pending[] = [];
    // FIFO admission: stop at the first request that does not fit, so a large request is never starved.
    while (this.queue.length && batch.length < maxBatch && this.queue[0].reserve <= free) {
      const p = this.queue.shift()!;
      free -= p.reserve;
      batch.push(p);
    }
    if (batch.length === 0) return;
    this.running = batch;
    this.batches++;
    try {
      const results = await this.model.generate(
        batch.map((p) => p.inputIds),
        batch.map((p) => ({ ...p.sampling, isAborted: (row: number) => batch[row].aborted, yieldEveryStep: true, onDecodeStep: () => void this.decodeSteps++ })),
      );
      results.forEach((r, i) => {
        this.generated += r.tokenIds.length;
        batch[i].resolve(r);
      });
    } catch (e) {
      for (const p of batch) p.reject(e);
    } finally {
      this.running = [];
    }
  }

  /** Replace the model object (same tokenizer expected) between batches. */
  setModel(model: PolicyModel): void {
    this.model = model;
  }
}
