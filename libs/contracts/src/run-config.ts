import { z } from 'zod';
import { parse as parseYaml } from 'yaml';
import { ConfigError, ENGINE_KINDS_WITH_PARTIAL_ABORT, PartialRolloutsUnsupportedError } from './errors';
import { closestKey, objectKeysAt } from './schema.suggest';

/**
 * The run config (YAML) of `rstar train`: model, data, SFT, RL stages, GRPO-RoC, tool limits, trainer,
 * engines and evaluation. Defaults follow docs/design/protocol.md; presets live in `configs/*.yaml`.
 */
export const ModelConfigSchema = z.strictObject({
  layers: z.number().int().min(1).max(48).default(2),
  dModel: z.number().int().min(8).max(8192).default(64),
  heads: z.number().int().min(1).max(64).default(4),
  context: z.number().int().min(16).max(131072).default(160),
  ffMult: z.number().int().min(1).max(8).default(4),
});

export const StageConfigSchema = z.strictObject({
  name: z.string().min(1),
  steps: z.number().int().min(1),
  promptsPerStep: z.number().int().min(1),
  /** G: rollouts kept per group; 2G are sampled (docs/design/protocol.md §5). */
  groupSize: z.number().int().min(1).default(16),
  oversample: z.number().int().min(1).default(2),
  maxResponseTokens: z.number().int().min(8),
  maxTurns: z.number().int().min(1).default(10),
  temperature: z.number().min(0).default(1),
  topP: z.number().gt(0).max(1).default(1),
  lr: z.number().positive(),
  /** Stage 3 of the recipe: keep only prompts the current policy does not always solve. */
  filterSolved: z.boolean().default(false),
});

export const RunConfigSchema = z.strictObject({
  name: z.string().min(1).default('run'),
  seed: z.number().int().default(1),
  policy: z
    .strictObject({
      /**
       * `builtin`: the TensorFlow.js tiny policy. `hf`: a Hugging Face causal LM trained by the trainer worker
       * (workers/trainer) and served by SGLang / vLLM / the reference engine. `external`: the older name of
       * `hf` (configs written before the worker existed keep parsing).
       */
      kind: z.enum(['builtin', 'hf', 'external']).default('builtin'),
      model: ModelConfigSchema.default(ModelConfigSchema.parse({})),
      /**
       * `hf`: the base model directory (config, safetensors, tokenizer.json, chat template) that the trainer
       * worker and the engines were started with and the SFT stage starts from. Absent: the trainer worker's
       * `--model` (distributed), or the hf-tiny model built offline when `name` is `hf-tiny` (`rstar train`).
       */
      path: z.string().min(1).optional(),
      /**
       * `hf`: how prompts are rendered with the model's chat template: `full` (system turn with the `# Tools`
       * section, docs/design/protocol.md §1) or `compact` (no system turn: the user instruction and the problem). The SFT
       * traces and every rollout of the run use it. Absent: policy-serving's own setting.
       */
      prompt: z.enum(['full', 'compact']).optional(),
      init: z.enum(['sft', 'checkpoint']).default('sft'),
      checkpoint: z.string().nullable().default(null),
      /** Name of the model for real engines (e.g. a HF id), informational for the builtin policy. */
      name: z.string().nullable().default(null),
    })
    .prefault({}),
  data: z
    .strictObject({
      /** `tasks`: the built-in seeded task family; `file`: a JSON-lines dataset ({id, problem, answer}). */
      source: z.enum(['tasks', 'file']).default('tasks'),
      path: z.string().nullable().default(null),
      heldOutPath: z.string().nullable().default(null),
      heldOutSize: z.number().int().min(1).default(64),
      trainSize: z.number().int().min(1).default(2048),
    })
    .prefault({}),
  sft: z
    .strictObject({
      steps: z.number().int().min(0).default(300),
      batchSize: z.number().int().min(1).default(32),
      lr: z.number().positive().default(3e-3),
      warmupSteps: z.number().int().min(0).default(20),
      /**
       * Share (0..1) of SFT traces that make a failing tool call, show its real error output and recover
       * (the GRPO-RoC ablation). Absent means 0; absent rather than defaulted so that configs
       * (and the `RunStarted` events that carry them) of runs without it stay byte-identical.
       */
      toolErrorRate: z.number().min(0).max(1).optional(),
      /**
       * Which mistakes the erring SFT traces make; absent means the recovering mix (wrong variable,
       * missing import, unclosed paren). `trailing-check`: the one call prints the answer, then fails.
       */
      toolErrorKinds: z.array(z.enum(['wrong-variable', 'missing-import', 'unclosed-paren', 'trailing-check'])).min(1).optional(),
      /**
       * `hf` policies: SFT updates sent to the trainer worker per request (one request = one checkpoint);
       * absent = all `steps` in ceil(steps / 50) requests. Warm-up counts requests.
       */
      updatesPerRequest: z.number().int().min(1).optional(),
    })
    .prefault({}),
  stages: z.array(StageConfigSchema).min(1),
  roc: z
    .strictObject({
      enabled: z.boolean().default(true),
      mode: z.enum(['weighted', 'topk']).default('weighted'),
      /**
       * Seconds the resampler waits for a group's 2G rewards before recording a timeout: an explicit override
       * of the per-stage budget (`groupTimeoutBudgetS`, which scales with the stage's maxResponseTokens).
       * Absent = that budget; absent rather than defaulted so that configs without it stay byte-identical.
       */
      groupTimeoutS: z.number().positive().optional(),
      /**
       * Dynamic sampling (DAPO): at most this many extra groups per step, drawn from the next prompts of the
       * step's seeded prompt order, to replace groups GRPO-RoC drops because all their rewards are equal,
       * until the step holds `promptsPerStep` kept groups. Absent = 0 (no refill, today's behaviour).
       */
      maxExtraGroups: z.number().int().min(0).optional(),
    })
    .prefault({}),
  tool: z
    .strictObject({
      name: z.enum(['python_code_with_standard_io', 'jupyter_code']).default('python_code_with_standard_io'),
      timeoutMs: z.number().int().min(100).max(600_000).default(4000),
      memoryMb: z.number().int().min(64).max(65536).default(384),
      outputChars: z.number().int().min(16).default(1000),
      responseChars: z.number().int().min(16).default(256),
      maxParallelCalls: z.number().int().min(1).default(1),
    })
    .prefault({}),
  trainer: z
    .strictObject({
      /**
       * `builtin`: libs/policy (TensorFlow.js). `worker`: the PyTorch trainer worker (workers/trainer) over
       * HTTP, batches as safetensors files in a shared directory. `external`: the older name of `worker`.
       */
      kind: z.enum(['builtin', 'worker', 'external']).default('builtin'),
      /** `worker`: its base URL (default: the optimization service's RSTAR_TRAINER_URL). */
      url: z.string().url().optional(),
      /**
       * `worker`: sequences per optimizer update (verl's ppo_mini_batch_size); absent = the whole batch in one
       * update. With more than one update per step the ratio moves off 1 and clip-higher / dual clip act.
       */
      miniBatch: z.number().int().min(1).optional(),
      /** `worker`: passes over the batch per step (default 1). */
      ppoEpochs: z.number().int().min(1).optional(),
      /**
       * `worker`: cap of tokens per packed micro-batch (sequences laid end to end, no padding), for RL and SFT
       * updates. On CPU the attention of a pack is a masked SDPA over the whole pack, quadratic in its length,
       * so a cap of a few hundred tokens is much faster there; on GPU (varlen) it only bounds memory.
       */
      microBatchTokens: z.number().int().min(1).optional(),
      /** `worker`: recompute activations in the backward pass (less memory). */
      gradientCheckpointing: z.boolean().optional(),
      /**
       * Truncated importance sampling: each token's loss weighted by min(pi_trainer / pi_engine, tisCap) with the
       * ratio taken against the trainer's recomputed logprobs, to correct the engine/trainer logprob mismatch;
       * absent = off (`worker`). It is decoupled PPO with a cap, so it also caps the weights of `decoupled`
       * (both trainers); absent there = no cap.
       */
      tisCap: z.number().min(1).optional(),
      /**
       * Off-policy correction for asynchronous rollouts: decoupled PPO (Hilton et al. 2022; AReaL, arXiv
       * 2505.24298). The PPO ratio is taken against the trainer's recomputed proximal logprobs (its weights
       * before the step's update) and each token is weighted by min(pi_prox / pi_behaviour, tisCap), pi_behaviour
       * being the logprob the engine recorded when it sampled the token (under whichever policy version served
       * it). With behaviour == proximal it is exactly the default loss. Both trainers (`builtin`, `worker`);
       * absent = off.
       */
      decoupled: z.boolean().optional(),
      /** `worker`: pi_old = the engine's sampling logprobs (`engine`, default) or the trainer's own before the update (`recomputed`). */
      oldLogprobs: z.enum(['engine', 'recomputed']).optional(),
      /** `worker`: seconds to wait for one step's result (training + checkpoint) before failing the run (default 3600). */
      stepTimeoutS: z.number().positive().optional(),
      /**
       * `worker`: how new weights reach the engines. `disk` (default): the checkpoint directory, each engine
       * re-reads it (`/update_weights_from_disk`). `distributed`: bf16 (fp32 for fp32 engines) buckets broadcast
       * from the trainer's memory over a torch.distributed group the engines join (SGLang
       * `/init_weights_update_group` + `/update_weights_from_distributed`; vLLM's weight-transfer routes).
       * Either way every engine then scores the behaviour probe against the trainer (docs/design/protocol.md §9).
       */
      weightSync: z.enum(['disk', 'distributed']).default('disk'),
      /** `worker`, `weightSync: distributed`: bucket size in MiB (one HTTP call and one set of broadcasts per bucket). */
      weightSyncBucketMB: z.number().positive().max(65536).default(512),
      /**
       * `worker`, `weightSync: distributed`: TCP port of the group's store on the trainer's host (reachable by the
       * engines). Absent: 29650 for a trainer on another host (the port the deployment opens), a free port for
       * a trainer on this machine (loopback URL), so that two local runs never contend for one port.
       */
      weightSyncPort: z.number().int().min(1).max(65535).optional(),
      /**
       * `worker`: the dtype the engines serve: the wire dtype of `distributed` buckets and what sets the default
       * probe tolerance on both paths (`float32` for fp32 engines such as the reference engine on CPU).
       */
      weightSyncDtype: z.enum(['bfloat16', 'float32']).default('bfloat16'),
      /**
       * `worker`: largest |log pi_engine - log pi_trainer| on the behaviour probe after each sync before the
       * step fails. Absent: 1e-3 when the engines serve fp32, 0.15 for bf16 (docs/design/protocol.md).
       */
      probeTolerance: z.number().positive().optional(),
      warmupSteps: z.number().int().min(0).default(20),
      epsLow: z.number().min(0).default(0.2),
      epsHigh: z.number().min(0).default(0.28),
      dualClip: z.number().min(1).default(3),
      weightDecay: z.number().min(0).default(0.01),
      gradClip: z.number().positive().default(1),
      microBatch: z.number().int().min(1).default(64),
    })
    .prefault({}),
  engines: z
    .array(
      z.strictObject({
        kind: z.enum(['builtin', 'sglang', 'vllm']),
        url: z.string().url().nullable().default(null),
        /** KV-cache capacity in tokens: the built-in engine's (default policy.model.context x 64) or the reference engine's (65536); real engines report theirs. */
        kvCapacityTokens: z.number().int().positive().nullable().default(null),
        /**
         * `sglang`: the engine shares its accelerator with the trainer; around each weight update the adapter
         * releases its memory (`/release_memory_occupation`, SGLang started with `--enable-memory-saver`) and
         * resumes weights, loads, then resumes the KV cache. Absent = off.
         */
        colocate: z.boolean().optional(),
      }),
    )
    .default([{ kind: 'builtin', url: null, kvCapacityTokens: null }]),
  scheduler: z.enum(['kv-budget', 'kv-adaptive', 'least-requests', 'round-robin']).default('kv-budget'),
  eval: z
    .strictObject({
      samples: z.number().int().min(1).default(1),
      temperature: z.number().min(0).default(0),
      maxTurns: z.number().int().min(1).default(10),
      maxResponseTokens: z.number().int().min(8).default(128),
    })
    .prefault({}),
  /**
   * Needs GPUs (e.g. a 14B preset): standalone `rstar train` refuses to run it here; the services run it
   * (`rstar train --remote`) when its policy is a Hugging Face model served by real engines and trained
   * by the trainer worker they are configured with.
   */
  validateOnly: z.boolean().default(false),
  /**
   * Which step checkpoints a run writes and keeps on disk. Absent = every one (and absent rather than
   * defaulted, so configs recorded without it stay byte-identical). `keepLast: N` keeps the N newest step
   * checkpoints; the SFT checkpoint is always kept. Resuming needs only the newest; `rstar replay verify
   * --retrain` skips steps whose start checkpoint was removed. With the trainer worker (docs/deploy.md
   * "Checkpoint volume"): `every` = trained steps between sharded model + optimizer checkpoints (default 1),
   * `keepLast` applies to those and to the per-step Hugging Face exports, `exportEvery` = steps between
   * milestone exports that are never pruned (the run's last step always leaves one).
   */
  checkpoints: z
    .strictObject({
      keepLast: z.number().int().min(1).optional(),
      every: z.number().int().min(1).optional(),
      exportEvery: z.number().int().min(1).optional(),
    })
    .optional(),
  /**
   * Bounded-staleness asynchronous RL (docs/design/protocol.md §10). `maxStaleness` η: while step s trains,
   * the rollouts of steps s+1..s+η are already requested, and a rollout started under policy version v is
   * trained at policy version <= v + η or discarded (`RolloutDiscarded`). 0 = the synchronous barrier.
   * `partialRollouts`: a weight update arriving while a turn is generated interrupts the turn and continues it
   * under the new weights, each stretch of tokens recording the policy version that sampled it
   * (`TurnGenerated.segments`, protocol.md §8); needs engines that can interrupt a turn
   * ({@link ENGINE_KINDS_WITH_PARTIAL_ABORT}) and `trainer.decoupled: true` (validation refuses it otherwise,
   * naming `trainer.decoupled`). Default false: an update waits for in-flight rollouts. The step
   * driver's window and staleness bound do not depend on it.
   * Absent = synchronous (and absent rather than defaulted, so configs recorded without it stay byte-identical).
   */
  async: z
    .strictObject({
      maxStaleness: z
        .number({ message: 'async.maxStaleness must be a whole number of policy versions >= 0 (0 = synchronous; 1 or 2 overlap rollouts with training)' })
        .int({ message: 'async.maxStaleness must be a whole number of policy versions (0 = synchronous; 1 or 2 overlap rollouts with training), not a fraction' })
        .min(0, { message: 'async.maxStaleness must be >= 0 policy versions (0 = synchronous; 1 or 2 overlap rollouts with training)' })
        .default(0),
      partialRollouts: z.boolean().default(false),
    })
    .optional(),
  /**
   * Optional experiment trackers that receive each step's metrics, the held-out pass@1 and a sample of
   * rollouts as a table (libs/trackers). Absent = none.
   */
  trackers: z
    .strictObject({
      /** MLflow tracking server (REST API); the experiment is created when missing. */
      mlflow: z.strictObject({ trackingUri: z.string().url(), experiment: z.string().min(1).default('rstar') }).optional(),
      /**
       * Weights & Biases in offline mode (no network): the run is written under `<dir>/wandb/offline-run-*`
       * by wandb's own client (`python` must have the `wandb` package); upload it later with `wandb sync`.
       */
      wandb: z.strictObject({ project: z.string().min(1).default('rstar'), dir: z.string().min(1).default('wandb'), python: z.string().min(1).default('python3') }).optional(),
      /** Rollouts of each step logged to the trackers' rollout table (0 = none). */
      sampleRollouts: z.number().int().min(0).max(1000).default(4),
    })
    .optional(),
});
export type RunConfig = z.infer<typeof RunConfigSchema>;
export type StageConfig = z.infer<typeof StageConfigSchema>;
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

/**
 * Validate a run config object. Throws {@link ConfigError} whose message names the field path and the
 * fix ({@link PartialRolloutsUnsupportedError} for `async.partialRollouts` on an engine that cannot interrupt a turn;
 * field `trainer.decoupled` for `async.partialRollouts` without decoupled PPO), e.g. `stages.0.lr: expected number, received string (fix the value in your YAML)`.
 */
export function parseRunConfig(input: unknown): RunConfig {
  refuseIgnoredFields(input);
  const r = RunConfigSchema.safeParse(input);
  if (!r.success) {
    const msgs = r.error.issues.map((i) => {
      const at = i.path.map(String).join('.') || '(root)';
      if (i.code !== 'unrecognized_keys') return `${at}: ${i.message}`;
      // A misspelt key: say which accepted one was probably meant.
      const known = objectKeysAt(RunConfigSchema, i.path);
      const hints = i.keys.map((k) => closestKey(k, known)).map((c, n) => (c ? `"${i.keys[n]}" (did you mean "${c}"?)` : `"${i.keys[n]}"`));
      return `${at}: unknown key${i.keys.length > 1 ? 's' : ''} ${hints.join(', ')}${known.length ? `; accepted: ${known.join(', ')}` : ''}`;
    });
    const field = r.error.issues[0].path.map(String).join('.') || null;
    throw new ConfigError(`invalid run config — ${msgs.join('; ')} (fix these fields in the config)`, field);
  }
  const c = r.data;
  if (c.policy.model.dModel % c.policy.model.heads !== 0) {
    throw new ConfigError('policy.model.dModel must be a multiple of policy.model.heads', 'policy.model.dModel');
  }
  if (c.policy.kind === 'external') c.policy.kind = 'hf';
  if (c.trainer.kind === 'external') c.trainer.kind = 'worker';
  const hf = c.policy.kind === 'hf';
  if (hf !== (c.trainer.kind === 'worker')) {
    throw new ConfigError(
      `policy.kind "${c.policy.kind}" needs trainer.kind "${hf ? 'worker' : 'builtin'}" (a Hugging Face policy trains on the trainer worker, the builtin policy on the builtin trainer)`,
      'trainer.kind',
    );
  }
  if (c.trainer.weightSync === 'distributed' && !hf) {
    // Only the trainer worker hosts a weight-update group; the builtin trainer hands its engine a checkpoint.
    throw new ConfigError('trainer.weightSync "distributed" needs trainer.kind "worker" (a Hugging Face policy): the builtin trainer updates its engine from disk; set trainer.weightSync: disk', 'trainer.weightSync');
  }
  if (c.trainer.weightSync === 'distributed') {
    const i = c.engines.findIndex((e) => e.colocate);
    // A colocated engine releases its weights around a disk update; a broadcast needs them resident.
    if (i >= 0) throw new ConfigError(`engines.${i}.colocate: a colocated engine is updated from disk around its memory release; remove colocate or set trainer.weightSync: disk`, `engines.${i}.colocate`);
  }
  if (hf && c.engines.some((e) => e.kind === 'builtin')) {
    throw new ConfigError('policy.kind "hf" needs real engines (engines[].kind sglang or vllm; the reference engine of workers/trainer speaks both)', 'engines');
  }
  const colocated = c.engines.findIndex((e) => e.colocate && e.kind !== 'sglang');
  if (colocated >= 0) {
    throw new ConfigError(`engines.${colocated}.colocate: only sglang engines release and resume their memory around a weight update; remove colocate or use kind sglang`, `engines.${colocated}.colocate`);
  }
  if (!hf) {
    // A built-in run starts exactly one built-in engine of its own: more entries, or a URL, would be ignored.
    if (c.engines.length > 1) {
      throw new ConfigError(`engines.1: a built-in policy run starts one built-in engine itself and would ignore engines 1..${c.engines.length - 1}; keep one entry (its kvCapacityTokens sets the engine's KV capacity)`, 'engines.1');
    }
    if (c.engines[0]?.url) {
      throw new ConfigError(`engines.0.url "${c.engines[0].url}" would be ignored: a built-in policy run starts its own engine on a free port; remove the url`, 'engines.0.url');
    }
    // The built-in policy's context holds the prompt and the response: a budget that fills it leaves no prompt room.
    const ctx = c.policy.model.context;
    for (const [field, n] of responseBudgets(c)) {
      if (n >= ctx) throw new ConfigError(`${field} is ${n}, but policy.model.context is ${ctx}: the prompt and the response must fit together (lower ${field} or raise policy.model.context)`, field);
    }
  }
  if (c.async?.partialRollouts) {
    const i = c.engines.findIndex((e) => !ENGINE_KINDS_WITH_PARTIAL_ABORT.includes(e.kind));
    if (i >= 0) throw new PartialRolloutsUnsupportedError(i, c.engines[i].kind);
    // One turn then holds tokens of two policy versions: only decoupled PPO weighs each token by the
    // behaviour logprob the engine recorded against the trainer's recomputed proximal one (protocol.md §8).
    if (c.trainer.decoupled !== true) {
      throw new ConfigError(
        'async.partialRollouts is true but trainer.decoupled is not: a partial rollout continues a turn under new weights, so its tokens come from two policy versions and the loss needs the decoupled off-policy correction; set trainer.decoupled: true, or set async.partialRollouts to false',
        'trainer.decoupled',
      );
    }
  }
  if (c.data.source === 'file' && !c.data.path) {
    throw new ConfigError('data.path is required when data.source is "file" (give a JSON-lines dataset)', 'data.path');
  }
  return c;
}

/** Config fields holding a file or directory path that rstar's services open from their own file system. */
export const PATH_FIELDS = ['policy.path', 'policy.checkpoint', 'data.path', 'data.heldOutPath'] as const;

const URI = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//;

function at(obj: unknown, path: string): unknown {
  let v: unknown = obj;
  for (const k of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/**
 * Refuse, before schema validation, what the services would silently ignore or misread (each error names
 * the field and the fix):
 * - a URI (`s3://`, `gs://`, `https://`, even `file://`) in a path field: no code fetches one, and a
 *   relative-looking `s3://…` would be resolved as a local path;
 * - `policy.model` other than the default with `policy.kind: hf`: the model's shape comes from its `config.json`.
 * A parsed config passes again unchanged (parsing is idempotent).
 * Throws {@link ConfigError}.
 */
export function refuseIgnoredFields(input: unknown): void {
  for (const field of PATH_FIELDS) {
    const v = at(input, field);
    const m = typeof v === 'string' ? URI.exec(v) : null;
    if (m) {
      throw new ConfigError(
        `${field} is the URI "${v}", but rstar reads only paths on the file system the services see (no code fetches ${m[1]}:// URIs): copy it to a volume the services mount (e.g. /shared/... or /models/...) and give that path`,
        field,
      );
    }
  }
  const kind = at(input, 'policy.kind');
  const model = at(input, 'policy.model');
  // A parsed config carries the default policy.model (and is parsed again, e.g. from a RunStarted event):
  // only a shape other than the default is a field someone set and the run would ignore.
  if ((kind === 'hf' || kind === 'external') && model !== undefined && JSON.stringify(ModelConfigSchema.safeParse(model).data) !== JSON.stringify(ModelConfigSchema.parse({}))) {
    throw new ConfigError(
      'policy.model is ignored by a Hugging Face policy (policy.kind "hf"): its shape comes from the model directory\'s config.json; remove policy.model (policy.path or policy.name names the model)',
      'policy.model',
    );
  }
}

/** Every response token budget of a run config with its field path: each stage's, then the evaluation's. */
export function responseBudgets(c: Pick<RunConfig, 'stages' | 'eval'>): Array<[field: string, tokens: number]> {
  return [...c.stages.map((s, i): [string, number] => [`stages.${i}.maxResponseTokens`, s.maxResponseTokens]), ['eval.maxResponseTokens', c.eval.maxResponseTokens]];
}

/** Parse YAML text (read from `source`, named in a syntax error) into a validated run config. Throws {@link ConfigError}. */
export function parseRunConfigYaml(text: string, source?: string): RunConfig {
  let obj: unknown;
  try {
    obj = parseYaml(text);
  } catch (e) {
    throw new ConfigError(`config ${source ? `${source} ` : ''}is not valid YAML: ${(e as Error).message}`, null);
  }
  return parseRunConfig(obj ?? {});
}
