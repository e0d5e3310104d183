import { z } from 'zod';

/**
 * Every event of docs/design/architecture.md §3: its `type`, current `version`, NATS subject and data schema.
 * Subjects are wire contracts (docs/design/style.md rule 4): change them only with a new version and an upcaster.
 */

const TokenIds = z.array(z.number().int().nonnegative());
const Logprobs = z.array(z.number());
// `invalid_request` was added later (a request that was not valid never ran): adding a value keeps every
// archived event parseable.
const ToolStatus = z.enum(['ok', 'runtime_error', 'timeout', 'memory_limit', 'output_limit', 'killed', 'sandbox_error', 'overloaded', 'invalid_request']);
export type ToolStatus = z.infer<typeof ToolStatus>;

export const RunStartedData = z.object({
  config: z.record(z.string(), z.unknown()),
  seed: z.number().int(),
  codeVersion: z.string(),
  mode: z.enum(['standalone', 'distributed']),
  resumedFrom: z.string().nullable().default(null),
  rerunOf: z.object({ runId: z.string(), step: z.number().int() }).nullable().default(null),
});
export const RunCompletedData = z.object({ steps: z.number().int().nonnegative(), summary: z.record(z.string(), z.unknown()) });
export const RunFailedData = z.object({ error: z.string(), step: z.number().int().nullable().default(null) });

export const StepStartedData = z.object({
  step: z.number().int().nonnegative(),
  stage: z.string(),
  promptIds: z.array(z.string()),
  policyVersion: z.number().int().nonnegative(),
});

export const SamplingParams = z.object({
  temperature: z.number().min(0),
  topP: z.number().gt(0).max(1),
  seed: z.number().int(),
});
export const RolloutRequestedData = z.object({
  rolloutId: z.string(),
  groupId: z.string(),
  step: z.number().int().nonnegative(),
  promptIdx: z.number().int().nonnegative(),
  sampleIdx: z.number().int().nonnegative(),
  promptId: z.string(),
  problem: z.string(),
  gold: z.string(),
  samplingParams: SamplingParams,
  budget: z.object({ maxTokens: z.number().int().positive(), maxTurns: z.number().int().positive() }),
  tool: z.enum(['python_code_with_standard_io', 'jupyter_code']).default('python_code_with_standard_io'),
  policyVersion: z.number().int().nonnegative(),
  /**
   * How the resampler treats this rollout's group (optional, added without a version bump): rollouts
   * expected in the group (2G), rollouts to keep (G), GRPO-RoC mode (`none` = plain GRPO), run seed of
   * the RoC PRNG and seconds to wait for the group. Absent = the resampler's configured defaults.
   */
  resample: z
    .object({
      expected: z.number().int().positive(),
      keep: z.number().int().positive(),
      mode: z.enum(['weighted', 'topk', 'none']),
      runSeed: z.number().int(),
      timeoutS: z.number().positive(),
    })
    .optional(),
  /**
   * How to render the prompt (optional, added without a version bump): `compact` = without the system turn.
   * Set by runs of a Hugging Face policy so that the rollouts use the format of the run's SFT traces; absent
   * = policy-serving's own setting.
   */
  prompt: z.object({ compact: z.boolean() }).optional(),
  /**
   * sha256 tokenizer hash of the run's model (optional, added without a version bump; workers/trainer README
   * gives the recipe): policy-serving refuses the rollout when its own tokenizer hashes differently.
   */
  tokenizerHash: z.string().optional(),
  /**
   * The run config's engines and scheduler (optional, added without a version bump): policy-serving samples
   * the rollout on exactly these, a URL the config leaves out taken from its own RSTAR_ENGINES at the same
   * index. Absent (runs recorded before it, standalone runs): policy-serving's own engines and scheduler.
   */
  engines: z.array(z.object({ kind: z.enum(['builtin', 'sglang', 'vllm']), url: z.string().nullable(), kvCapacityTokens: z.number().int().positive().nullable() })).min(1).optional(),
  scheduler: z.enum(['kv-budget', 'kv-adaptive', 'least-requests', 'round-robin']).optional(),
  /**
   * Partial rollouts (run config `async.partialRollouts`; optional, added without a version bump): a
   * `PolicyUpdated` that arrives while one of this rollout's turns is being generated interrupts the turn,
   * loads the new weights and continues it under them (its `TurnGenerated.segments` say which version
   * sampled which tokens). Absent or false: the update waits until the rollout completes.
   */
  partialRollouts: z.boolean().optional(),
});

/**
 * One stretch of a turn's tokens sampled by one policy version: tokens `fromToken` up to the next segment's
 * `fromToken` (or the end of the turn), under `policyVersion`, the engine reporting `weightVersion`.
 */
export const TurnSegment = z.object({
  fromToken: z.number().int().nonnegative(),
  policyVersion: z.number().int().nonnegative(),
  weightVersion: z.string().optional(),
});

export const TurnGeneratedData = z.object({
  rolloutId: z.string(),
  turn: z.number().int().nonnegative(),
  tokenIds: TokenIds,
  logprobs: Logprobs,
  text: z.string(),
  finishReason: z.enum(['stop', 'length', 'abort', 'error']),
  engineId: z.string(),
  /**
   * The policy version the engines held when the turn was generated, as policy-serving verified it
   * (optional, added without a version bump; absent in runs recorded before it).
   */
  policyVersion: z.number().int().nonnegative().optional(),
  /** The weight version the engine reported with the generation (SGLang `meta_info.weight_version`), when it reports one. */
  weightVersion: z.string().optional(),
  /**
   * Partial rollouts only (optional, added without a version bump): the turn was interrupted by a weight
   * update and continued under the new weights; one entry per policy version that sampled part of it, in
   * token order, the first at token 0. `policyVersion` and `weightVersion` above are then the first
   * segment's. Absent: every token was sampled by `policyVersion`.
   */
  segments: z.array(TurnSegment).min(2).optional(),
});

export const ToolLimits = z.object({
  timeoutMs: z.number().int().positive(),
  memoryMb: z.number().int().positive(),
});
export const ToolCallRequestedData = z.object({
  callId: z.string(),
  rolloutId: z.string(),
  turn: z.number().int().nonnegative(),
  tool: z.string(),
  code: z.string(),
  input: z.string().default(''),
  session: z.string().nullable().default(null),
  limits: ToolLimits,
});
export const ToolCallCompletedData = z.object({
  callId: z.string(),
  rolloutId: z.string(),
  turn: z.number().int().nonnegative(),
  status: ToolStatus,
  stdout: z.string(),
  stderr: z.string(),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  wallMs: z.number().nonnegative(),
  cpuMs: z.number().nonnegative(),
  truncated: z.boolean(),
  sessionReset: z.boolean().default(false),
  /** Session calls: whether the session's interpreter lives on after the call (absent in older events). */
  sessionKept: z.boolean().optional(),
});

export const RolloutCompletedData = z.object({
  rolloutId: z.string(),
  groupId: z.string(),
  step: z.number().int().nonnegative(),
  promptId: z.string(),
  gold: z.string(),
  engineId: z.string(),
  policyVersion: z.number().int().nonnegative(),
  promptTokenIds: TokenIds,
  /** Everything after the prompt: model tokens and tool-response tokens, in order. */
  responseTokenIds: TokenIds,
  /** Sampling logprob per response token (0 for tool-response tokens). */
  logprobs: Logprobs,
  /** 1 = model token (trained on), 0 = tool-response token. Same length as responseTokenIds. */
  lossMask: z.array(z.union([z.literal(0), z.literal(1)])),
  responseText: z.string(),
  turns: z.number().int().nonnegative(),
  toolCalls: z.number().int().nonnegative(),
  toolErrors: z.number().int().nonnegative(),
  answerBlocks: z.number().int().nonnegative(),
  formatViolations: z.number().int().nonnegative(),
  truncated: z.boolean(),
  /** `context_exceeded`: the engine refused the next turn (context window full); the rollout is truncated there. */
  finishReason: z.enum(['answer', 'no_tool_call', 'budget', 'max_turns', 'error', 'context_exceeded']),
  /**
   * The problem text of the `RolloutRequested` (optional, added without a version bump): reward-grading
   * uses it for the problem-aware rules (a precision or unit the problem asks for, its options). Absent =
   * the grader stays strict.
   */
  problem: z.string().optional(),
});

export const RewardAssignedData = z.object({
  rolloutId: z.string(),
  groupId: z.string(),
  step: z.number().int().nonnegative(),
  reward: z.union([z.literal(0), z.literal(1)]),
  correct: z.boolean(),
  extracted: z.string().nullable(),
  gold: z.string(),
  normalizedPrediction: z.string().nullable(),
  normalizedGold: z.string().nullable(),
  rule: z.string(),
  /** Grading time in ms; null when it was not measured (a v1 event, upcast: v1 did not record it). */
  ms: z.number().nonnegative().nullable(),
});

export const RocPenalty = z.object({ rolloutId: z.string(), pErr: z.number(), pFormat: z.number() });
export const GroupResampledData = z.object({
  groupId: z.string(),
  step: z.number().int().nonnegative(),
  promptId: z.string(),
  mode: z.enum(['weighted', 'topk', 'none']),
  seed: z.string(),
  kept: z.array(z.string()),
  dropped: z.array(z.string()),
  penalties: z.array(RocPenalty),
  rewards: z.record(z.string(), z.number()),
  /** Why the whole group was dropped, or null when G rollouts were kept. */
  groupDropped: z.enum(['all_equal', 'timeout']).nullable(),
  received: z.number().int().nonnegative(),
  expected: z.number().int().positive(),
  /**
   * Why a group timed out (optional, added without a version bump; only with `groupDropped: 'timeout'`, absent
   * in runs recorded before it): its budget and how long the resampler waited (s), the requested rollouts still
   * missing their RolloutCompleted or RewardAssigned, the expected ones never requested, and the one-line
   * reason `groupTimeoutReason` makes of them.
   */
  timeout: z
    .object({
      budgetS: z.number().positive(),
      waitedS: z.number().nonnegative(),
      missing: z.array(z.object({ rolloutId: z.string(), waitingFor: z.enum(['completion', 'reward']) })),
      unseen: z.number().int().nonnegative(),
      reason: z.string(),
    })
    .optional(),
});

/** One engine's behaviour probe: its logprobs of a fixed token sequence against the trainer's (docs/design/protocol.md). */
export const WeightProbeResult = z.object({
  engineId: z.string(),
  sync: z.enum(['distributed', 'disk']),
  version: z.number().int().nonnegative(),
  tokens: z.number().int().positive(),
  maxAbsDiff: z.number().nonnegative(),
  meanAbsDiff: z.number().nonnegative(),
  /** Position in the probe (1 = the second token, the first one scored), its id, and both logprobs there. */
  worst: z.object({ position: z.number().int().positive(), tokenId: z.number().int().nonnegative(), trainer: z.number(), engine: z.number() }),
  tolerance: z.number().positive(),
  passed: z.boolean(),
  /** Sync seconds (all buckets, or the disk load) and probe milliseconds. */
  syncSeconds: z.number().nonnegative().optional(),
  probeMs: z.number().nonnegative().optional(),
});
export type WeightProbeResult = z.infer<typeof WeightProbeResult>;

export const StepOptimizedData = z.object({
  step: z.number().int().nonnegative(),
  loss: z.number(),
  clipFraction: z.number(),
  approxKl: z.number(),
  entropy: z.number().nullable(),
  gradNorm: z.number(),
  advantageMean: z.number(),
  advantageStd: z.number(),
  tokens: z.number().int().nonnegative(),
  rollouts: z.number().int().nonnegative(),
  batchHash: z.string(),
  newPolicyVersion: z.number().int().nonnegative(),
  checkpointUri: z.string(),
  checkpointHash: z.string(),
  /**
   * Trainer-worker figures (optional, added without a version bump; the builtin trainer leaves them out):
   * share of tokens where the dual clip bound, optimizer updates of the step (PPO mini-batches x epochs),
   * the learning rate used, and the sha256 of the safetensors batch file the worker trained on.
   */
  dualClipFraction: z.number().nullable().optional(),
  updates: z.number().int().nonnegative().optional(),
  lr: z.number().optional(),
  batchFileHash: z.string().optional(),
  /**
   * Engine/trainer logprob mismatch before the update, on every model token: mean and max |log pi_trainer -
   * log pi_engine|, the k3 estimate of KL(engine || trainer), and the range of pi_trainer / pi_engine.
   */
  logprobDrift: z
    .object({ tokens: z.number().int().nonnegative(), meanAbs: z.number(), maxAbs: z.number(), mismatchKl: z.number(), ratioMin: z.number(), ratioMax: z.number() })
    .nullable()
    .optional(),
  /**
   * Truncated importance sampling or decoupled PPO (`trainer.decoupled`), when on: the cap (null = decoupled
   * PPO without a cap), the mean behaviour weight pi_prox / pi_behaviour and the share of tokens at the cap.
   */
  tis: z.object({ cap: z.number().nullable(), meanWeight: z.number(), cappedFraction: z.number() }).nullable().optional(),
  /**
   * The behaviour probe after the weights reached the engines (optional, added without a version bump):
   * per engine, how the sync went (`distributed` | `disk`), and the largest and mean |log pi_engine -
   * log pi_trainer| over the probe's tokens with the token where it was largest.
   */
  weightProbe: z.array(WeightProbeResult).optional(),
});

/**
 * A completed, kept rollout that optimization left out of its step's batch (docs/design/protocol.md §10):
 * `stale` = the policy version it started under (`policyVersion`) is more than `maxStaleness` (η) versions
 * behind the trainer's version when its step trains (`trainPolicyVersion`); `staleness` is their difference.
 */
export const RolloutDiscardedData = z.object({
  rolloutId: z.string(),
  groupId: z.string(),
  step: z.number().int().nonnegative(),
  reason: z.enum(['stale']),
  policyVersion: z.number().int().nonnegative(),
  trainPolicyVersion: z.number().int().nonnegative(),
  staleness: z.number().int().nonnegative(),
  maxStaleness: z.number().int().nonnegative(),
});

/** One bucket of a distributed weight sync: parameter names, wire dtype names and shapes, and its bytes. */
export const WeightBucketSpec = z.object({
  names: z.array(z.string()).min(1),
  dtypes: z.array(z.string()).min(1),
  shapes: z.array(z.array(z.number().int().nonnegative())),
  bytes: z.number().int().nonnegative(),
});

export const PolicyUpdatedData = z.object({
  version: z.number().int().nonnegative(),
  checkpointUri: z.string(),
  checkpointHash: z.string(),
  /**
   * How the engines get this version (optional, added without a version bump; absent = from the checkpoint
   * on disk). `distributed` (docs/design/protocol.md §9): policy-serving has every engine receive `buckets`
   * in order over the weight-update group `groupName` (joined once per run at its start) while the
   * optimization service has the trainer broadcast them; the last bucket sets the engines' weight version.
   * `step`: the step whose update this is.
   */
  sync: z
    .object({ kind: z.literal('distributed'), step: z.number().int().nonnegative(), groupName: z.string(), dtype: z.string(), buckets: z.array(WeightBucketSpec).min(1) })
    .optional(),
});

export const StepCompletedData = z.object({
  step: z.number().int().nonnegative(),
  stage: z.string(),
  metrics: z.record(z.string(), z.number().nullable()),
});

/**
 * A held-out evaluation of the policy: pass@1 = mean correctness over `samples` answers per prompt, on
 * `prompts` held-out prompts, after `afterStep` RL steps (0 = before RL) with policy version `policyVersion`.
 */
export const EvaluationCompletedData = z.object({
  name: z.string(),
  afterStep: z.number().int().nonnegative(),
  policyVersion: z.number().int().nonnegative(),
  passAt1: z.number().min(0).max(1),
  prompts: z.number().int().nonnegative(),
  samples: z.number().int().positive(),
});

export const DeadLetteredData = z.object({
  subject: z.string(),
  consumer: z.string(),
  reason: z.string(),
  field: z.string().nullable(),
  payload: z.string(),
});

/** Contract table: type -> current version, subject, data schema. */
export const EVENT_CONTRACTS = {
  RunStarted: { version: 1, subject: 'rstar.run.started', data: RunStartedData },
  RunCompleted: { version: 1, subject: 'rstar.run.completed', data: RunCompletedData },
  RunFailed: { version: 1, subject: 'rstar.run.failed', data: RunFailedData },
  StepStarted: { version: 1, subject: 'rstar.step.started', data: StepStartedData },
  RolloutRequested: { version: 1, subject: 'rstar.rollout.requested', data: RolloutRequestedData },
  TurnGenerated: { version: 1, subject: 'rstar.rollout.turn', data: TurnGeneratedData },
  ToolCallRequested: { version: 1, subject: 'rstar.tool.requested', data: ToolCallRequestedData },
  ToolCallCompleted: { version: 1, subject: 'rstar.tool.completed', data: ToolCallCompletedData },
  RolloutCompleted: { version: 1, subject: 'rstar.rollout.completed', data: RolloutCompletedData },
  RewardAssigned: { version: 2, subject: 'rstar.reward.assigned', data: RewardAssignedData },
  GroupResampled: { version: 1, subject: 'rstar.group.resampled', data: GroupResampledData },
  StepOptimized: { version: 1, subject: 'rstar.step.optimized', data: StepOptimizedData },
  PolicyUpdated: { version: 1, subject: 'rstar.policy.updated', data: PolicyUpdatedData },
  RolloutDiscarded: { version: 1, subject: 'rstar.rollout.discarded', data: RolloutDiscardedData },
  StepCompleted: { version: 1, subject: 'rstar.step.completed', data: StepCompletedData },
  EvaluationCompleted: { version: 1, subject: 'rstar.eval.completed', data: EvaluationCompletedData },
  DeadLettered: { version: 1, subject: 'rstar.dlq', data: DeadLetteredData },
} as const;

export type EventType = keyof typeof EVENT_CONTRACTS;
export const EVENT_TYPES = Object.keys(EVENT_CONTRACTS) as EventType[];
export type EventData<T extends EventType> = z.infer<(typeof EVENT_CONTRACTS)[T]['data']>;
/** The data a producer passes in (defaults not yet applied). */
export type EventDataInput<T extends EventType> = z.input<(typeof EVENT_CONTRACTS)[T]['data']>;

/** NATS subject of an event type. */
export function subjectOf(type: EventType): string {
  return EVENT_CONTRACTS[type].subject;
}

/** Event type of a NATS subject, or undefined for a subject no contract names. */
export function typeOfSubject(subject: string): EventType | undefined {
  return EVENT_TYPES.find((t) => EVENT_CONTRACTS[t].subject === subject);
}
