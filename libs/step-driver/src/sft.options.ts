import type { RunConfig } from '@rstar/contracts';
import type { SftOptions } from '@rstar/policy';
import type { SandboxPool } from '@rstar/sandbox';

/**
 * At most this many held-out tasks check the SFT checkpoint (greedy two-turn answers, `SftResult.heldOut`):
 * a quick figure printed after SFT, not the run's held-out pass@1 (which uses all `data.heldOutSize`
 * prompts). The held-out tasks do not change the trained weights.
 */
export const SFT_HELD_OUT_CHECK_MAX = 16;

/**
 * The `runSft` options of a run's SFT stage: the one place they are built from a config, so that the
 * standalone run, the distributed run start, the RoC ablation and the SFT cache key agree. From the
 * config: the `sft` section (steps, batch size, learning rate, warm-up, erring-trace share and kinds),
 * the seed (`seed` overrides it: the ablation's per-seed arms), the model shape, `data.trainSize`, and
 * `min(`{@link SFT_HELD_OUT_CHECK_MAX}`, data.heldOutSize)` check tasks. With `sandbox`, the traces'
 * programs run there under the run's tool limits (`tool.timeoutMs`, `tool.memoryMb`, `tool.outputChars`);
 * without it `runSft` starts a pool of its own with the sandbox's default limits.
 */
export function sftOptionsOf(config: RunConfig, o: { outDir: string; sandbox?: Pick<SandboxPool, 'execute'>; seed?: number }): SftOptions {
  const sandbox = o.sandbox;
  return {
    steps: config.sft.steps,
    batchSize: config.sft.batchSize,
    lr: config.sft.lr,
    warmupSteps: config.sft.warmupSteps,
    seed: o.seed ?? config.seed,
    model: config.policy.model,
    trainSize: config.data.trainSize,
    heldOutSize: Math.min(SFT_HELD_OUT_CHECK_MAX, config.data.heldOutSize),
    toolErrorRate: config.sft.toolErrorRate ?? 0,
    toolErrorKinds: config.sft.toolErrorKinds,
    outDir: o.outDir,
    execute: sandbox
      ? (req) => sandbox.execute({ code: req.code, input: req.input, timeoutMs: config.tool.timeoutMs, memoryMb: config.tool.memoryMb, outputChars: config.tool.outputChars })
      : undefined,
  };
}
