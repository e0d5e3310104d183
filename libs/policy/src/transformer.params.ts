import * as tf from '@tensorflow/tfjs';
import type { ModelConfig } from '@rstar/contracts';
import { PolicyInputError } from './errors';
import { Rng } from './rng';

/** One named parameter: shape and whether AdamW decays it (matrices yes, gains/biases/embeddings no). */
export interface ParamSpec {
  name: string;
  shape: number[];
  decay: boolean;
  init: 'normal' | 'resid' | 'zeros' | 'ones';
}

/** The parameter list of a pre-LN decoder-only transformer, in a fixed order (the checkpoint layout). */
export function paramSpecs(cfg: ModelConfig, vocabSize: number): ParamSpec[] {
  const D = cfg.dModel;
  const F = cfg.dModel * cfg.ffMult;
  const specs: ParamSpec[] = [
    { name: 'wte', shape: [vocabSize, D], decay: false, init: 'normal' },
    { name: 'wpe', shape: [cfg.context, D], decay: false, init: 'normal' },
  ];
  for (let l = 0; l < cfg.layers; l++) {
    specs.push(
      { name: `h${l}.ln1_g`, shape: [D], decay: false, init: 'ones' },
      { name: `h${l}.ln1_b`, shape: [D], decay: false, init: 'zeros' },
      { name: `h${l}.wqkv`, shape: [D, 3 * D], decay: true, init: 'normal' },
      { name: `h${l}.bqkv`, shape: [3 * D], decay: false, init: 'zeros' },
      { name: `h${l}.wo`, shape: [D, D], decay: true, init: 'resid' },
      { name: `h${l}.bo`, shape: [D], decay: false, init: 'zeros' },
      { name: `h${l}.ln2_g`, shape: [D], decay: false, init: 'ones' },
      { name: `h${l}.ln2_b`, shape: [D], decay: false, init: 'zeros' },
      { name: `h${l}.w1`, shape: [D, F], decay: true, init: 'normal' },
      { name: `h${l}.b1`, shape: [F], decay: false, init: 'zeros' },
      { name: `h${l}.w2`, shape: [F, D], decay: true, init: 'resid' },
      { name: `h${l}.b2`, shape: [D], decay: false, init: 'zeros' },
    );
  }
  specs.push(
    { name: 'lnf_g', shape: [D], decay: false, init: 'ones' },
    { name: 'lnf_b', shape: [D], decay: false, init: 'zeros' },
    { name: 'wout', shape: [D, vocabSize], decay: true, init: 'normal' },
  );
  return specs;
}

/** Validate a model config against the invariants the forward pass relies on. */
export function checkModelConfig(cfg: ModelConfig): void {
  if (cfg.dModel % cfg.heads !== 0) {
    throw new PolicyInputError(`model.dModel (${cfg.dModel}) must be a multiple of model.heads (${cfg.heads})`, 'model.dModel');
  }
}

/**
 * GPT-2 style initialisation from a seeded JS PRNG (so a seed fixes the weights on every backend):
 * N(0, 0.02), residual projections scaled by 1/sqrt(2 * layers) (Radford et al. 2019, §2.3).
 */
export function initParams(specs: ParamSpec[], cfg: ModelConfig, seed: number): Float32Array[] {
  const rng = new Rng(seed);
  const residStd = 0.02 / Math.sqrt(2 * cfg.layers);
  return specs.map((s) => {
    const n = s.shape.reduce((a, b) => a * b, 1);
    const a = new Float32Array(n);
    if (s.init === 'ones') a.fill(1);
    else if (s.init === 'normal' || s.init === 'resid') {
      const std = s.init === 'resid' ? residStd : 0.02;
      for (let i = 0; i < n; i++) a[i] = rng.normal() * std;
    }
    return a;
  });
}

/** Count of scalar parameters. */
export function countParams(specs: ParamSpec[]): number {
  return specs.reduce((acc, s) => acc + s.shape.reduce((a, b) => a * b, 1), 0);
}

/** Parameters as tf variables, keyed by name. */
export type ParamMap = Record<string, tf.Variable>;

let modelCounter = 0;

/** Create the variables; tfjs variable names are process-global, so each model gets its own prefix. */
export function toVariables(specs: ParamSpec[], values: Float32Array[]): ParamMap {
  const out: ParamMap = {};
  const prefix = `policy${modelCounter++}`;
  specs.forEach((s, i) => {
    out[s.name] = tf.variable(tf.tensor(values[i], s.shape, 'float32'), true, `${prefix}/${s.name}`);
  });
  return out;
}
