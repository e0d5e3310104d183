import { SandboxPool } from '@rstar/sandbox';
import { PolicyModel, Trainer, buildSftTrace, generateTasks, sandboxExecutor, setLinearGradient, taskPrompt, type SftTrace } from '@rstar/policy';

const arg = (args: string[], name: string, dflt: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};

let peakRss = 0;
const sampleRss = () => (peakRss = Math.max(peakRss, process.memoryUsage().rss));

/** Tokens/s of `steps` SFT steps of batch 32 on task-family traces (after one warm-up step). */
function trainRate(model: PolicyModel, traces: SftTrace[], steps: number): number {
  const trainer = new Trainer(model, { lr: 1e-3, warmupSteps: 0 });
  const batch = (k: number) => {
    const b = traces.slice((k * 32) % traces.length).concat(traces).slice(0, 32);
    return { tokenIds: b.map((t) => t.tokenIds), lossMask: b.map((t) => t.lossMask) };
  };
  trainer.sftStep(batch(0));
  let tokens = 0;
  const t0 = performance.now();
  for (let s = 1; s <= steps; s++) {
    const b = batch(s);
    trainer.sftStep(b);
    tokens += b.tokenIds.reduce((a, x) => a + x.length, 0);
    sampleRss();
  }
  return tokens / ((performance.now() - t0) / 1000);
}

/**
 * `pnpm bench policy [--steps N] [--new-tokens N]`: training and sampling throughput of the default built-in
 * model, batch 32. Baselines in the same run: training with tfjs's own matMul gradient instead of the
 * custom linear gradient, and sampling by recomputing the full forward pass per token (no KV cache).
 */
export async function run(args: string[]): Promise<object> {
  const steps = arg(args, 'steps', 10);
  const newTokens = arg(args, 'new-tokens', 64);
  const model = await PolicyModel.create({}, 1);
  const pool = new SandboxPool({ workers: 2 });
  await pool.start();
  const exec = sandboxExecutor(pool);
  const tasks = generateTasks({ seed: 7, n: 64 });
  const traces = await Promise.all(tasks.map(async (t) => buildSftTrace(t, await exec({ code: t.code }), model.tokenizer)));
  await pool.close();
  const meanLen = traces.reduce((a, t) => a + t.tokenIds.length, 0) / traces.length;
  process.stderr.write(`model ${model.numParams} parameters, traces ${meanLen.toFixed(1)} tokens on average\n`);

  const train = trainRate(model, traces, steps);
  process.stderr.write(`train (custom linear gradient): ${train.toFixed(0)} tokens/s\n`);
  setLinearGradient('autodiff');
  const trainBase = trainRate(model, traces, Math.max(2, Math.ceil(steps / 2)));
  setLinearGradient('custom');
  process.stderr.write(`train baseline (autodiff matMul gradient): ${trainBase.toFixed(0)} tokens/s\n`);

  const prompts = tasks.slice(0, 32).map((t) => model.tokenizer.encode(taskPrompt(t)));
  await model.generate(prompts.slice(0, 2), { maxNewTokens: 2 });
  const t0 = performance.now();
  const out = await model.generate(prompts, { temperature: 1, seed: 1, maxNewTokens: newTokens, ignoreEos: true });
  const sampled = out.reduce((a, g) => a + g.tokenIds.length, 0);
  const sample = sampled / ((performance.now() - t0) / 1000);
  sampleRss();
  process.stderr.write(`sample (KV cache, batch 32): ${sample.toFixed(0)} tokens/s\n`);

  // No-cache baseline: one full forward pass over the growing sequences per new token (8 tokens suffice).
  const seqs = prompts.map((p) => [...p]);
  const t1 = performance.now();
  for (let k = 0; k < 8; k++) {
    model.sequenceLogprobs(seqs.map((s) => [...s, 0]));
    seqs.forEach((s) => s.push(out[0].tokenIds[k]));
  }
  const sampleBase = (8 * 32) / ((performance.now() - t1) / 1000);
  sampleRss();
  process.stderr.write(`sample baseline (no KV cache): ${sampleBase.toFixed(0)} tokens/s\n`);
  model.dispose();
  return {
    bench: 'policy',
    train_tokens_per_s: Math.round(train),
    sample_tokens_per_s: Math.round(sample),
    peak_rss_mb: Math.round(peakRss / 2 ** 20),
    params: model.numParams,
    batch: 32,
    baseline_train_tokens_per_s_autodiff_matmul: Math.round(trainBase),
    baseline_sample_tokens_per_s_no_kv_cache: Math.round(sampleBase),
  };
}
