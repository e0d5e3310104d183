import type { Command } from 'commander';
import { stepSummaryLine } from '../train/progress.printer';
import { runRocAblation } from '../train/roc.ablation';
import { loadRunConfig } from '../train/run-config.loader';

const fmt = (v: number | null) => (v === null ? '   -  ' : v.toFixed(3).padStart(6));

/** `rstar ablate roc [--preset tiny] [--seeds 1,2]`: GRPO-RoC vs plain GRPO, same seeds; prints and writes the curves. */
export function register(program: Command): void {
  program
    .command('ablate')
    .description('ablations; "roc": GRPO-RoC vs plain GRPO on the same seeds (tool-error ratio in positive rollouts per step)')
    .argument('<which>', 'the ablation: roc')
    .option('--preset <name>', 'preset under configs/', 'tiny')
    .option('--config <file>', 'YAML run config (wins over --preset)')
    .option('--seeds <list>', 'comma-separated seeds', '1,2')
    .option('--out <dir>', 'output folder (default runs/ablate-roc-<time>)')
    .option('--skip-eval', 'skip the held-out pass@1 evaluations')
    .action(async (which: string, o: { preset: string; config?: string; seeds: string; out?: string; skipEval?: boolean }) => {
      if (!process.env.RSTAR_LOG_LEVEL) process.env.RSTAR_LOG_LEVEL = 'warn';
      if (which !== 'roc') throw new Error(`unknown ablation "${which}" (known: roc)`);
      const seeds = o.seeds.split(',').map((s) => Number(s.trim()));
      if (seeds.some((s) => !Number.isInteger(s))) throw new Error(`--seeds must be comma-separated integers, got "${o.seeds}"`);
      const { config } = loadRunConfig({ preset: o.preset, file: o.config });
      const r = await runRocAblation(config, {
        seeds, outDir: o.out, skipEval: o.skipEval,
        onProgress: (arm, p) => {
          if (p.phase === 'rl') process.stdout.write(`[${arm}] ${stepSummaryLine(p)}\n`);
          else if (p.phase === 'message') process.stdout.write(`[${arm}] ${p.text}\n`);
        },
      });
      process.stdout.write('\nstep  toolErr+ RoC  toolErr+ GRPO   (tool-error ratio in positive rollouts, mean over seeds)\n');
      const steps = Math.max(...r.arms.map((a) => a.toolErrorRatioPositive.length));
      for (let i = 0; i < steps; i++) {
        const m = (arm: string) => {
          const v = r.arms.filter((a) => a.arm === arm).map((a) => a.toolErrorRatioPositive[i]).filter((x): x is number => x !== null && x !== undefined);
          return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
        };
        process.stdout.write(`${String(i).padStart(4)}  ${fmt(m('roc'))}        ${fmt(m('grpo'))}\n`);
      }
      process.stdout.write(`mean  ${fmt(r.meanToolErrorRatioPositive.roc)}        ${fmt(r.meanToolErrorRatioPositive.grpo)}\n`);
      process.stdout.write(`all rollouts: tool-error ratio RoC ${fmt(r.meanToolErrorRatioAll.roc)}, GRPO ${fmt(r.meanToolErrorRatioAll.grpo)}\nfiles: ${r.files.join(', ')}\n`);
      process.exit(0);
    });
}
