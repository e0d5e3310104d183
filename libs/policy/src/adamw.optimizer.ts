import * as tf from '@tensorflow/tfjs';

/** AdamW hyper-parameters. */
export interface AdamWOptions {
  /** Peak learning rate. */
  lr: number;
  /** Linear warm-up from 0 to `lr` over this many steps. */
  warmupSteps: number;
  /** When set, cosine decay from `lr` to `minLrRatio · lr` between the end of warm-up and this step. */
  totalSteps?: number;
  minLrRatio?: number;
  weightDecay: number;
  /** Global gradient-norm clip (docs/design/protocol.md §6: 1.0). */
  gradClip: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
}

/** Serializable optimizer state (moments in parameter order). */
export interface AdamWState {
  step: number;
  m: Float32Array[];
  v: Float32Array[];
}

/**
 * AdamW (Loshchilov & Hutter 2019) with decoupled weight decay on the `decay` parameters only, linear
 * warm-up, optional cosine decay, and global-norm gradient clipping.
 */
export class AdamW {
  step = 0;
  private m: tf.Variable[];
  private v: tf.Variable[];

  constructor(
    private readonly vars: tf.Variable[],
    private readonly decay: boolean[],
    readonly opts: AdamWOptions,
  ) {
    this.m = vars.map((x) => tf.variable(tf.zerosLike(x), false));
    this.v = vars.map((x) => tf.variable(tf.zerosLike(x), false));
  }

  /** Learning rate at optimizer step `t` (1-based). */
  lrAt(t: number): number {
    const { lr, warmupSteps, totalSteps, minLrRatio = 0.1 } = this.opts;
    if (warmupSteps > 0 && t <= warmupSteps) return (lr * t) / warmupSteps;
    if (!totalSteps || totalSteps <= warmupSteps) return lr;
    const prog = Math.min(1, (t - warmupSteps) / (totalSteps - warmupSteps));
    return lr * (minLrRatio + (1 - minLrRatio) * 0.5 * (1 + Math.cos(Math.PI * prog)));
  }

  /** Apply one update from `grads` (same order as the variables). Returns the pre-clip global norm and the lr used. */
  apply(grads: tf.Tensor[]): { gradNorm: number; lr: number } {
    const b1 = this.opts.beta1 ?? 0.9;
    const b2 = this.opts.beta2 ?? 0.95;
    const eps = this.opts.eps ?? 1e-8;
    const gradNorm = tf.tidy(() => Math.sqrt(tf.addN(grads.map((g) => tf.sum(tf.square(g)))).dataSync()[0]));
    const scale = gradNorm > this.opts.gradClip ? this.opts.gradClip / (gradNorm + 1e-6) : 1;
    this.step += 1;
    const lr = this.lrAt(this.step);
    const bc1 = 1 - Math.pow(b1, this.step);
    const bc2 = 1 - Math.pow(b2, this.step);
    tf.tidy(() => {
      this.vars.forEach((w, i) => {
        const g = tf.mul(grads[i], scale);
        const m = tf.add(tf.mul(this.m[i], b1), tf.mul(g, 1 - b1));
        const v = tf.add(tf.mul(this.v[i], b2), tf.mul(tf.square(g), 1 - b2));
        this.m[i].assign(m);
        this.v[i].assign(v);
        let upd = tf.div(tf.div(m, bc1), tf.add(tf.sqrt(tf.div(v, bc2)), eps));
        if (this.decay[i] && this.opts.weightDecay > 0) upd = tf.add(upd, tf.mul(w, this.opts.weightDecay));
        w.assign(tf.sub(w, tf.mul(upd, lr)));
      });
    });
    return { gradNorm, lr };
  }

  exportState(): AdamWState {
    return { step: this.step, m: this.m.map((t) => new Float32Array(t.dataSync())), v: this.v.map((t) => new Float32Array(t.dataSync())) };
  }

  importState(s: AdamWState): void {
    this.step = s.step;
    s.m.forEach((a, i) => this.m[i].assign(tf.tensor(a, this.m[i].shape)));
    s.v.forEach((a, i) => this.v[i].assign(tf.tensor(a, this.v[i].shape)));
  }

  dispose(): void {
    for (const t of [...this.m, ...this.v]) t.dispose();
  }
}
