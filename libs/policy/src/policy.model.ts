import * as tf from '@tensorflow/tfjs';
import { ModelConfigSchema, type ModelConfig } from '@rstar/contracts';
import { initBackend } from './backend';
import { readCheckpoint, writeCheckpoint } from './checkpoint.store';
import { ContextOverflowError, PolicyInputError } from './errors';
import { sampleWithCache, type GenerationResult, type SamplingOptions } from './kv-cache.sampler';
import { deriveSeed } from './rng';
import { Tokenizer } from './tokenizer';
import { targetLogProbs } from './transformer.forward';
import { checkModelConfig, countParams, initParams, paramSpecs, toVariables, type ParamMap, type ParamSpec } from './transformer.params';
import type { AdamWState } from './adamw.optimizer';

/** Options of {@link PolicyModel.generate}: one object for all rows, or one per row. */
export type GenerateOptions = SamplingOptions & {
  /** Polled between decode steps; a row for which it returns true ends with finishReason 'abort'. */
  isAborted?: (row: number) => boolean;
  /** Yield the event loop between decode steps (so an HTTP server stays responsive). Default false. */
  yieldEveryStep?: boolean;
  /** Called between decode steps (the first row's option counts), e.g. to count them. */
  onDecodeStep?: () => void;
};

/**
 * The built-in policy: a small pre-LN decoder-only transformer (GPT-2 layout) on tfjs (wasm backend),
 * with its tokenizer. Create with {@link PolicyModel.create} or {@link PolicyModel.load}; train with `Trainer`.
 */
export class PolicyModel {
  /** Optimizer state to persist with the weights; set by the Trainer that owns this model. */
  optimizerSource: { exportState(): AdamWState } | null = null;
  /** Optimizer state read from a checkpoint, consumed by the next Trainer created on this model. */
  loadedOptimizerState: AdamWState | null = null;
  /** Content hash of the checkpoint these weights came from / were last saved to, else null. */
  hash: string | null = null;

  private constructor(
    readonly config: ModelConfig,
    readonly tokenizer: Tokenizer,
    readonly specs: ParamSpec[],
    readonly params: ParamMap,
    public meta: Record<string, unknown> = {},
  ) {}

  /** A freshly initialised model; the same `cfg` and `seed` give bit-identical weights. */
  static async create(cfg: Partial<ModelConfig> = {}, seed = 0, tokenizer = new Tokenizer()): Promise<PolicyModel> {
    await initBackend();
    const config = ModelConfigSchema.parse(cfg);
    checkModelConfig(config);
    const specs = paramSpecs(config, tokenizer.vocabSize);
    return new PolicyModel(config, tokenizer, specs, toVariables(specs, initParams(specs, config, seed)));
  }

  /** Load a checkpoint written by {@link save} (verifies its content hash; throws CheckpointError). */
  static async load(dir: string): Promise<PolicyModel> {
    await initBackend();
    const ck = readCheckpoint(dir);
    const tokenizer = new Tokenizer(ck.tokenizer);
    const specs = paramSpecs(ck.config, tokenizer.vocabSize);
    const model = new PolicyModel(ck.config, tokenizer, specs, toVariables(specs, ck.weights), ck.meta);
    model.loadedOptimizerState = ck.optimizer;
    model.hash = ck.hash;
    return model;
  }

  /** Number of scalar parameters. */
  get numParams(): number {
    return countParams(this.specs);
  }

  /** Variables in checkpoint order. */
  variables(): tf.Variable[] {
    return this.specs.map((s) => this.params[s.name]);
  }

  /** Copy of the weights (checkpoint order). */
  weights(): Float32Array[] {
    return this.variables().map((v) => new Float32Array(v.dataSync()));
  }

  /** Replace the weights in place from another checkpoint of the same architecture (hot reload). */
  async loadWeightsFrom(dir: string): Promise<string> {
    const ck = readCheckpoint(dir);
    if (JSON.stringify(ck.config) !== JSON.stringify(this.config) || JSON.stringify(ck.tokenizer) !== JSON.stringify(this.tokenizer.spec)) {
      throw new PolicyInputError(`checkpoint ${dir} has a different model config or tokenizer than the loaded model (restart the engine with it instead)`, 'model_path');
    }
    this.variables().forEach((v, i) => v.assign(tf.tensor(ck.weights[i], v.shape)));
    this.hash = ck.hash;
    this.meta = ck.meta;
    return ck.hash;
  }

  /** Save weights + config + tokenizer (+ optimizer state when a Trainer is attached) atomically; returns the content hash. */
  save(dir: string, meta: Record<string, unknown> = this.meta): { dir: string; hash: string } {
    const r = writeCheckpoint(dir, {
      config: this.config, tokenizer: this.tokenizer.spec, params: this.specs.map((s) => ({ name: s.name, shape: s.shape })),
      weights: this.weights(), optimizer: this.optimizerSource?.exportState() ?? null, meta,
    });
    this.hash = r.hash;
    this.meta = meta;
    return r;
  }

  /** Throws when a sequence is empty, too long, or holds ids outside the vocabulary. */
  checkSequences(seqs: number[][], field: string, extra = 0): void {
    if (!Array.isArray(seqs) || seqs.length === 0) throw new PolicyInputError(`${field} must be a non-empty array of token-id arrays`, field);
    seqs.forEach((s, i) => {
      if (!Array.isArray(s) || s.length === 0) throw new PolicyInputError(`${field}[${i}] must be a non-empty array of token ids`, `${field}[${i}]`);
      if (s.length + extra > this.config.context) throw new ContextOverflowError(s.length + extra, this.config.context, `${field}[${i}]`);
      for (const id of s) {
        if (!Number.isInteger(id) || id < 0 || id >= this.tokenizer.vocabSize) {
          throw new PolicyInputError(`${field}[${i}] holds token id ${id}, outside [0, ${this.tokenizer.vocabSize}) (encode with this model's tokenizer)`, `${field}[${i}]`);
        }
      }
    });
  }

  /**
   * Batched sampling with a KV cache. `prompts` [B][Lp_b] token ids; `opts` one object (row b then uses seed
   * `deriveSeed(seed, b)`) or one per row (seeds used as given). Returns per row the new token ids, their
   * logprobs under the raw model and the finish reason. Rows stop at eos (IM_END), a stop id/string,
   * `maxNewTokens` or the context window.
   */
  async generate(prompts: number[][], opts: GenerateOptions | GenerateOptions[] = {}): Promise<GenerationResult[]> {
    this.checkSequences(prompts, 'prompts');
    const per = Array.isArray(opts) ? opts : prompts.map((_, b) => ({ ...opts, seed: deriveSeed(opts.seed ?? 0, b) }));
    if (per.length !== prompts.length) throw new PolicyInputError(`opts has ${per.length} entries for ${prompts.length} prompts (pass one per prompt or a single object)`, 'opts');
    per.forEach((o, i) => {
      if (o.temperature !== undefined && !(o.temperature >= 0)) throw new PolicyInputError(`opts[${i}].temperature must be >= 0`, 'temperature');
      if (o.topP !== undefined && !(o.topP > 0 && o.topP <= 1)) throw new PolicyInputError(`opts[${i}].topP must be in (0, 1]`, 'topP');
      if (o.maxNewTokens !== undefined && !(Number.isInteger(o.maxNewTokens) && o.maxNewTokens >= 0)) throw new PolicyInputError(`opts[${i}].maxNewTokens must be a non-negative integer`, 'maxNewTokens');
    });
    const first = Array.isArray(opts) ? opts[0] : opts;
    const yieldStep = per.some((o) => o.yieldEveryStep);
    return sampleWithCache(this.params, this.config, this.tokenizer.vocabSize, prompts, per, {
      eosId: this.tokenizer.eosId,
      tokenText: (id) => this.tokenizer.tokenText(id),
      isAborted: first?.isAborted,
      onStep: yieldStep || first?.onDecodeStep
        ? async () => {
          first?.onDecodeStep?.();
          if (yieldStep) await new Promise((r) => setImmediate(r));
        }
        : undefined,
    });
  }

  /**
   * Logprob of every given token under the current weights: `out[b][t] = log P(seqs[b][t] | seqs[b][<t])`
   * for t >= 1 and `out[b][0] = 0`. Runs in micro-batches of `microBatch` sequences.
   */
  sequenceLogprobs(seqs: number[][], microBatch = 32): number[][] {
    this.checkSequences(seqs, 'seqs');
    const out: number[][] = [];
    for (let i = 0; i < seqs.length; i += microBatch) {
      const chunk = seqs.slice(i, i + microBatch);
      const T = Math.max(...chunk.map((s) => s.length));
      if (T < 2) {
        for (const s of chunk) out.push(s.map(() => 0));
        continue;
      }
      const padded = chunk.map((s) => [...s, ...new Array(T - s.length).fill(0)]);
      const lp = tf.tidy(() => targetLogProbs(this.params, this.config, this.tokenizer.vocabSize, padded).lp);
      const data = lp.dataSync();
      lp.dispose();
      chunk.forEach((s, b) => {
        const row = [0];
        for (let t = 1; t < s.length; t++) row.push(data[b * (T - 1) + t - 1]);
        out.push(row);
      });
    }
    return out;
  }

  /** Release the tensors. */
  dispose(): void {
    for (const v of this.variables()) v.dispose();
  }
}
