import { EngineResponseError } from './engine.errors';
import { requestJson, type RetryPolicy } from './http.client';

/** A collective call must never be repeated (a second broadcast would wait forever for its peers). */
const ONCE: RetryPolicy = { attempts: 1, baseMs: 0, maxMs: 0, timeoutMs: 1_800_000 };

/** Where an engine or the trainer worker answers HTTP. */
export interface HttpEndpoint {
  id: string;
  url: string;
  apiKey?: string | null;
}

/** One bucket of the trainer's weights: parameter names, dtype names (`bfloat16`, `float32`) and shapes, and its bytes. */
export interface WeightBucket {
  names: string[];
  dtypes: string[];
  shapes: number[][];
  bytes: number;
}

/** The rendezvous of a weight-update group: the trainer (rank 0) hosts the store at `masterAddress:masterPort`. */
export interface UpdateGroupSpec {
  masterAddress: string;
  masterPort: number;
  worldSize: number;
  groupName: string;
  /** `nccl` on GPUs (RCCL on ROCm), `gloo` on CPU; absent: each side picks by its device (the reference engine and the trainer worker do; SGLang assumes nccl). */
  backend?: 'nccl' | 'gloo';
}

/**
 * An engine's side of weight transfer over torch.distributed and of the behaviour probe. The SGLang and vLLM
 * adapters each give one ({@link sglangWeightTransfer}, {@link vllmWeightTransfer}).
 */
export interface WeightTransfer {
  /** Join the group as rank `rankOffset` (blocks until every rank has joined). */
  initGroup(group: UpdateGroupSpec, rankOffset: number): Promise<void>;
  /** Receive one bucket while the trainer broadcasts it; the last bucket carries the weight version and the flush. */
  receiveBucket(bucket: WeightBucket, opts: { groupName: string; weightVersion?: string; flushCache?: boolean }): Promise<void>;
  /** Called once after the last bucket (vLLM's finish phase; nothing for SGLang). */
  finish(): Promise<void>;
  /** log pi(t_i | t_<i) for i = 1..n-1 of the served weights: prompt logprobs, nothing sampled. */
  promptLogprobs(tokenIds: number[]): Promise<number[]>;
}

function ensureOk(ep: HttpEndpoint, path: string, res: unknown): void {
  const r = res as { success?: boolean; message?: string } | null;
  if (r && r.success === false) throw new EngineResponseError(ep.id, `${path} failed: ${r.message ?? 'no message'}`);
}

async function post(ep: HttpEndpoint, path: string, body: unknown): Promise<unknown> {
  const res = await requestJson(ep.id, ep.url.replace(/\/+$/, ''), path, { body, apiKey: ep.apiKey ?? null }, ONCE);
  ensureOk(ep, path, res);
  return res;
}

/**
 * SGLang's routes: `POST /init_weights_update_group {master_address, master_port, rank_offset, world_size,
 * group_name, backend}`, `POST /update_weights_from_distributed {names, dtypes, shapes, group_name,
 * weight_version, flush_cache}`, and prompt logprobs from `POST /generate` with `return_logprob: true`,
 * `logprob_start_len: 0` (`meta_info.input_token_logprobs`: `[logprob|null, token_id, text]` per prompt token).
 */
export function sglangWeightTransfer(ep: HttpEndpoint): WeightTransfer {
  return {
    async initGroup(g, rankOffset) {
      await post(ep, '/init_weights_update_group', {
        master_address: g.masterAddress, master_port: g.masterPort, rank_offset: rankOffset, world_size: g.worldSize, group_name: g.groupName,
        ...(g.backend ? { backend: g.backend } : {}),
      });
    },
    async receiveBucket(b, o) {
      await post(ep, '/update_weights_from_distributed', {
        names: b.names, dtypes: b.dtypes, shapes: b.shapes, group_name: o.groupName,
        ...(o.weightVersion === undefined ? {} : { weight_version: o.weightVersion }), flush_cache: o.flushCache ?? false,
      });
    },
    async finish() {},
    async promptLogprobs(tokenIds) {
      const res = (await requestJson(ep.id, ep.url.replace(/\/+$/, ''), '/generate', {
        apiKey: ep.apiKey ?? null,
        body: { input_ids: tokenIds, return_logprob: true, logprob_start_len: 0, sampling_params: { max_new_tokens: 1, temperature: 0 } },
      }, ONCE)) as { meta_info?: { input_token_logprobs?: [number | null, number, unknown][] } } | null;
      const lps = res?.meta_info?.input_token_logprobs;
      if (!Array.isArray(lps) || lps.length !== tokenIds.length) {
        throw new EngineResponseError(ep.id, `/generate with logprob_start_len 0 gave ${Array.isArray(lps) ? lps.length : 'no'} input_token_logprobs for ${tokenIds.length} prompt tokens`);
      }
      return lps.slice(1).map((e, i) => {
        if (typeof e[0] !== 'number' || e[1] !== tokenIds[i + 1]) throw new EngineResponseError(ep.id, `input_token_logprobs[${i + 1}] is ${JSON.stringify(e)}, expected a logprob of token ${tokenIds[i + 1]}`);
        return e[0];
      });
    },
  };
}

/**
 * vLLM's weight-transfer routes (`vllm serve ... --weight-transfer-config '{"backend": "nccl"}'` with
 * `VLLM_SERVER_DEV_MODE=1`): `POST /init_weight_transfer_engine {init_info: {master_address, master_port,
 * rank_offset, world_size}}`, `/start_weight_update`, `/update_weights {update_info: {names, dtype_names,
 * shapes}}`, `/finish_weight_update`; prompt logprobs from `/v1/completions` with `prompt_logprobs: 0`.
 */
export function vllmWeightTransfer(ep: HttpEndpoint, model: () => Promise<string>): WeightTransfer {
  let started = false;
  return {
    async initGroup(g, rankOffset) {
      await post(ep, '/init_weight_transfer_engine', { init_info: { master_address: g.masterAddress, master_port: g.masterPort, rank_offset: rankOffset, world_size: g.worldSize } });
    },
    async receiveBucket(b) {
      if (!started) await post(ep, '/start_weight_update', {});
      started = true;
      await post(ep, '/update_weights', { update_info: { names: b.names, dtype_names: b.dtypes, shapes: b.shapes } });
    },
    async finish() {
      started = false;
      await post(ep, '/finish_weight_update', {});
    },
    async promptLogprobs(tokenIds) {
      const res = (await requestJson(ep.id, ep.url.replace(/\/+$/, ''), '/v1/completions', {
        apiKey: ep.apiKey ?? null, body: { model: await model(), prompt: tokenIds, max_tokens: 1, temperature: 0, prompt_logprobs: 0 },
      }, ONCE)) as { choices?: { prompt_logprobs?: (Record<string, { logprob: number }> | null)[] }[] } | null;
      const pl = res?.choices?.[0]?.prompt_logprobs;
      if (!Array.isArray(pl) || pl.length !== tokenIds.length) throw new EngineResponseError(ep.id, '/v1/completions with prompt_logprobs: 0 gave no prompt_logprobs for every prompt token');
      return pl.slice(1).map((e, i) => {
        const v = e?.[String(tokenIds[i + 1])]?.logprob;
        if (typeof v !== 'number') throw new EngineResponseError(ep.id, `prompt_logprobs[${i + 1}] has no logprob of token ${tokenIds[i + 1]}`);
        return v;
      });
    },
  };
}

/** The trainer's answer to `POST /v1/weight-sync/plan` (see {@link TrainerWeightSource.plan}). */
export interface TrainerBucketPlan {
  buckets: WeightBucket[];
  totalBytes: number;
  parameters: number;
  /** The group the trainer process has joined; null when none (absent from workers older than this field). */
  groupName?: string | null;
}

/** The trainer worker's side (workers/trainer/rstar_trainer/weight_sync.py): the group, the bucket plan, the broadcasts, its probe logprobs. */
export class TrainerWeightSource {
  readonly ep: HttpEndpoint;

  constructor(url: string, apiKey: string | null = null) {
    this.ep = { id: 'trainer', url, apiKey };
  }

  async join(g: UpdateGroupSpec): Promise<void> {
    await post(this.ep, '/v1/weight-sync/group', g);
  }

  /**
   * The buckets of the policy `runId`@`policyVersion` the trainer holds (refused when it holds another), and
   * `groupName`: the weight-update group the trainer process has joined, null when none (it restarted since).
   */
  async plan(policy: { runId?: string; policyVersion?: number }, bucketMB: number, dtype: string): Promise<TrainerBucketPlan> {
    return (await post(this.ep, '/v1/weight-sync/plan', { ...policy, bucketMB, dtype })) as TrainerBucketPlan;
  }

  async sendBucket(k: number, policy: { runId?: string; policyVersion?: number }, bucketMB: number, dtype: string, groupName: string): Promise<void> {
    await post(this.ep, `/v1/weight-sync/buckets/${k}`, { ...policy, bucketMB, dtype, groupName });
  }

  /** The trainer's log pi(t_i | t_<i), i >= 1, of the weights it holds (of `policy` when given). */
  async probe(tokenIds: number[], policy?: { runId: string; policyVersion: number }): Promise<number[]> {
    const r = (await post(this.ep, '/v1/probe', { tokenIds, ...policy })) as { logprobs: number[] };
    return r.logprobs;
  }
}

/** One engine in a distributed sync. */
export interface SyncEngine {
  id: string;
  transfer: WeightTransfer;
}

/** Options of {@link DistributedWeightSync}. */
export interface DistributedSyncOptions {
  trainer: TrainerWeightSource;
  engines: readonly SyncEngine[];
  group: Omit<UpdateGroupSpec, 'worldSize'>;
  /** Bucket size in MiB (run config `trainer.weightSyncBucketMB`). */
  bucketMB: number;
  /** Wire dtype: `bfloat16` for bf16 engines, `float32` for fp32 ones. */
  dtype: string;
}

/**
 * Weights from the trainer's memory into every engine over one torch.distributed group: `init()` once (the
 * trainer as rank 0 and engine i as rank 1 + i join together), then `sync()` per policy version: the
 * trainer's bucket plan, and for each bucket the trainer's broadcast and every engine's receive at the same
 * time; the last bucket sets the engines' weight version and flushes their prefix cache.
 */
export class DistributedWeightSync {
  private joined = false;

  constructor(private readonly o: DistributedSyncOptions) {}

  get groupName(): string {
    return this.o.group.groupName;
  }

  /** Form the group (idempotent; a second call re-forms it). */
  async init(): Promise<void> {
    const g: UpdateGroupSpec = { ...this.o.group, worldSize: 1 + this.o.engines.length };
    await Promise.all([this.o.trainer.join(g), ...this.o.engines.map((e, i) => e.transfer.initGroup(g, 1 + i))]);
    this.joined = true;
  }

  /**
   * Send policy `policyVersion` of `runId` (which the trainer must hold; no runId: what it holds) to every engine.
   * `opts.bucketMB` overrides the bucket size for this sync. @returns seconds, buckets and bytes sent. @throws EngineResponseError naming the side that failed.
   */
  async sync(policy: { runId?: string; policyVersion: number }, opts: { bucketMB?: number } = {}): Promise<{ seconds: number; buckets: number; bytes: number; parameters: number }> {
    if (!this.joined) await this.init();
    const t0 = performance.now();
    const { dtype } = this.o;
    const bucketMB = opts.bucketMB ?? this.o.bucketMB;
    // Without a runId the trainer sends whatever it holds (the base model at a run's start, version 0).
    const named = policy.runId === undefined ? {} : { runId: policy.runId, policyVersion: policy.policyVersion };
    const plan = await this.o.trainer.plan(named, bucketMB, dtype);
    for (const [k, b] of plan.buckets.entries()) {
      const last = k === plan.buckets.length - 1;
      await Promise.all([
        this.o.trainer.sendBucket(k, named, bucketMB, dtype, this.groupName),
        ...this.o.engines.map((e) => e.transfer.receiveBucket(b, { groupName: this.groupName, ...(last ? { weightVersion: String(policy.policyVersion), flushCache: true } : {}) })),
      ]);
    }
    await Promise.all(this.o.engines.map((e) => e.transfer.finish()));
    return { seconds: (performance.now() - t0) / 1000, buckets: plan.buckets.length, bytes: plan.totalBytes, parameters: plan.parameters };
  }
}
