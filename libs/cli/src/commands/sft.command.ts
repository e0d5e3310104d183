import type { Command } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { runSft, SFT_PRESETS, type SftPreset, type SftProgress } from '@rstar/policy';
import { CliInputError } from '../cli.errors';

const int = (v: string | undefined, flag: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new CliInputError(`${flag} must be a non-negative integer, got "${v}"`);
  return n;
};

/**
 * `rstar sft --preset tiny [--steps N] [--out DIR]`: the non-reasoning SFT stage of the built-in policy.
 * Builds traces by executing the task family's programs in the sandbox, trains, writes the
 * checkpoint, and prints held-out tool-format accuracy and the correct-answer rate with real tool execution.
 * Progress bar on a TTY, plain log lines otherwise.
 */
export function register(program: Command): void {
  program
    .command('sft')
    .description('train the built-in policy on tool-call traces (SFT) and write a checkpoint')
    .option('--preset <name>', `settings preset (${Object.keys(SFT_PRESETS).join(', ')})`, 'tiny')
    .option('--steps <n>', 'optimizer steps (default: from the preset)')
    .option('--batch-size <n>', 'traces per step (default: from the preset)')
    .option('--seed <n>', 'seed of data, init and sampling', '1')
    .option('--out <dir>', 'checkpoint directory (default: checkpoints/sft-<preset>)')
    .action(async (o: { preset: string; steps?: string; batchSize?: string; seed: string; out?: string }) => {
      if (o.batchSize !== undefined && !(Number.isInteger(Number(o.batchSize)) && Number(o.batchSize) > 0)) throw new CliInputError(`--batch-size must be a positive integer, got "${o.batchSize}"`);
      if (!(o.preset in SFT_PRESETS)) throw new CliInputError(`--preset must be one of ${Object.keys(SFT_PRESETS).join(', ')}, got "${o.preset}"`);
      const tty = process.stderr.isTTY === true;
      const bar = tty ? new SingleBar({ format: 'sft |{bar}| {value}/{total} steps | loss {loss} | {phase}', hideCursor: true }, Presets.shades_classic) : null;
      let started = false;
      let lastLog = 0;
      const onProgress = (p: SftProgress) => {
        if (p.phase === 'traces') {
          if (p.done === p.total) process.stderr.write(`built ${p.total} traces (programs executed in the sandbox)\n`);
          return;
        }
        if (p.phase === 'eval') {
          bar?.update({ phase: 'evaluating held-out' });
          bar?.stop();
          process.stderr.write('evaluating on held-out prompts (tool calls executed for real)...\n');
          return;
        }
        if (bar && !started) {
          bar.start(p.steps, 0, { loss: '-', phase: 'training' });
          started = true;
        }
        bar?.update(p.step, { loss: p.loss.toFixed(4), phase: `${(p.tokens / (p.elapsedMs / 1000)).toFixed(0)} tok/s` });
        if (!bar && (p.step === p.steps || Date.now() - lastLog > 10_000)) {
          lastLog = Date.now();
          process.stderr.write(`step ${p.step}/${p.steps} loss ${p.loss.toFixed(4)} lr ${p.lr.toExponential(2)} ${(p.elapsedMs / 1000).toFixed(0)} s\n`);
        }
      };
      const r = await runSft(
        { preset: o.preset as SftPreset, steps: int(o.steps, '--steps'), batchSize: int(o.batchSize, '--batch-size'), seed: int(o.seed, '--seed'), outDir: o.out },
        onProgress,
      );
      const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
      process.stdout.write(
        `checkpoint ${r.checkpoint.dir} (${r.checkpoint.hash})\n` +
          `model ${r.numParams} parameters; ${r.steps} steps in ${r.trainSeconds.toFixed(0)} s (${r.trainTokensPerS.toFixed(0)} tokens/s), final loss ${r.steps > 0 ? r.finalLoss.toFixed(4) : '- (no steps: untrained)'}\n` +
          `held-out (${r.heldOut.n} prompts): well-formed tool calls ${pct(r.heldOut.toolFormat)}, correct answers with real tool execution ${pct(r.heldOut.correct)}\n`,
      );
      r.model.dispose();
    });
}
