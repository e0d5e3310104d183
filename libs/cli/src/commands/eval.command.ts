import type { Command } from 'commander';
import { evaluateCheckpoint } from '@rstar/training';
import { CliInputError } from '../cli.errors';

const int = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new CliInputError(`--${name} must be a positive integer, got "${v}"`);
  return n;
};

/** `rstar eval --checkpoint C --dataset D [--samples k]`: pass@1 of a checkpoint, printed as a line and as JSON. */
export function register(program: Command): void {
  program
    .command('eval')
    .description('pass@1 (mean over k samples) of a built-in policy checkpoint on a JSON-lines dataset or the task family')
    .requiredOption('--checkpoint <dir>', 'checkpoint directory (e.g. runs/<runId>/checkpoints/step-19)')
    .requiredOption('--dataset <path|tasks>', 'JSON-lines file of {id, problem, answer}, or "tasks" for the held-out task family')
    .option('--samples <k>', 'samples per prompt', int('samples'), 1)
    .option('--limit <n>', 'first n prompts only', int('limit'))
    .option('--temperature <t>', 'sampling temperature (default 0 for one sample, else 1)', parseFloat)
    .option('--max-turns <n>', 'max assistant turns', int('max-turns'))
    .option('--max-tokens <n>', 'response token budget', int('max-tokens'))
    .option('--seed <n>', 'task-family seed (with --dataset tasks)', int('seed'))
    .action(async (o: { checkpoint: string; dataset: string; samples: number; limit?: number; temperature?: number; maxTurns?: number; maxTokens?: number; seed?: number }) => {
      if (!process.env.RSTAR_LOG_LEVEL) process.env.RSTAR_LOG_LEVEL = 'warn';
      let last = -1;
      const r = await evaluateCheckpoint({
        checkpoint: o.checkpoint, dataset: o.dataset, samples: o.samples, limit: o.limit, temperature: o.temperature, maxTurns: o.maxTurns,
        maxResponseTokens: o.maxTokens, seed: o.seed,
        onProgress: (done, total) => {
          const pct = Math.floor((done / total) * 10);
          if (pct !== last) process.stderr.write(`eval ${done}/${total}\n`);
          last = pct;
        },
      });
      process.stdout.write(`pass@1 ${(r.passAt1 * 100).toFixed(1)}% on ${r.prompts} prompts x ${r.samples} samples${r.skipped ? ` (${r.skipped} longer than the context skipped)` : ''} (tool use ${(r.toolUse * 100).toFixed(0)}%, tool errors ${(r.toolErrorRatio * 100).toFixed(0)}%)\n`);
      process.stdout.write(JSON.stringify({ ...r, examples: undefined }) + '\n');
      process.exit(0);
    });
}
