import type { Command } from 'commander';
import { loadRunConfig } from '@rstar/step-driver';
import { runRocAblation } from '@rstar/training';
import { meanCurve, STEP_LINE_LEGEND, stepSummaryLine } from '@rstar/training-report';
import { CliInputError } from '../cli.errors';

const fmt = (v: number | null | undefined) => (v === null || v === undefined ? '   -  ' : v.toFixed(3).padStart(6));

/**
 * `rstar ablate roc [--preset roc-ablation] [--seeds 1,2]`: GRPO-RoC vs plain GRPO from the same SFT
 * checkpoint per seed; prints per-step and total tool-error ratios and pass rates, writes the report folder.
 */
export function register(program: Command): void {
  program
    .command('ablate')
    .description('ablations; "roc": GRPO-RoC vs plain GRPO on the same seeds (tool-error ratio in positive rollouts per step)')
    .argument('<which>', 'the ablation: roc')
    .option('--preset <name>', 'preset under configs/', 'roc-ablation')
    .option('--config <file>', 'YAML run config (wins over --preset)')
    .option('--seeds <list>', 'comma-separated seeds', '1,2')
    .option('--last-k <n>', 'steps at the end averaged in the "last K" totals (default: half the steps)')
    .option('--out <dir>', 'output folder (default runs/ablate-roc-<time>; reusing one reuses its SFT checkpoints)')
    .option('--skip-eval', 'skip the held-out pass@1 evaluations')
    .action(async (which: string, o: { preset: string; config?: string; seeds: string; lastK?: string; out?: string; skipEval?: boolean }) => {
      if (!process.env.RSTAR_LOG_LEVEL) process.env.RSTAR_LOG_LEVEL = 'warn';
      if (which !== 'roc') throw new CliInputError(`unknown ablation "${which}" (known: roc)`);
      const seeds = o.seeds.split(',').map((s) => Number(s.trim()));
      if (seeds.some((s) => !Number.isInteger(s))) throw new CliInputError(`--seeds must be comma-separated integers, got "${o.seeds}"`);
      const lastK = o.lastK === undefined ? undefined : Number(o.lastK);
      if (lastK !== undefined && !(Number.isInteger(lastK) && lastK >= 1)) throw new CliInputError(`--last-k must be a positive integer, got "${o.lastK}"`);
      const { config } = loadRunConfig({ preset: o.preset, file: o.config });
      let legend = false;
      const r = await runRocAblation(config, {
        seeds, outDir: o.out, skipEval: o.skipEval, lastK,
        onProgress: (arm, p) => {
          if (p.phase === 'rl') {
            if (!legend) process.stdout.write(`${STEP_LINE_LEGEND}\n`);
            legend = true;
            process.stdout.write(`[${arm}] ${stepSummaryLine(p)}\n`);
          }
          else if (p.phase === 'message') process.stdout.write(`[${arm}] ${p.text}\n`);
          else if (p.phase === 'sft' && (p.step % 50 === 0 || p.step === p.steps)) process.stdout.write(`[${arm}] SFT step ${p.step}/${p.steps} loss ${p.loss.toFixed(3)}\n`);
        },
      });
      const curve = (arm: 'roc' | 'grpo', k: 'toolErrorRatioPositive' | 'toolErrorRatioAll' | 'passRate') => meanCurve(r.arms.filter((a) => a.arm === arm), k);
      const c = { rp: curve('roc', 'toolErrorRatioPositive'), gp: curve('grpo', 'toolErrorRatioPositive'), ra: curve('roc', 'toolErrorRatioAll'), ga: curve('grpo', 'toolErrorRatioAll'), rr: curve('roc', 'passRate'), gr: curve('grpo', 'passRate') };
      process.stdout.write('\nmean over seeds   toolErr+ (positive rollouts)   toolErr (all rollouts)   pass rate\nstep              RoC     GRPO                   RoC     GRPO             RoC     GRPO\n');
      for (let i = 0; i < c.rp.length; i++) {
        process.stdout.write(`${String(i).padStart(4)}            ${fmt(c.rp[i])}  ${fmt(c.gp[i])}                ${fmt(c.ra[i])}  ${fmt(c.ga[i])}          ${fmt(c.rr[i])}  ${fmt(c.gr[i])}\n`);
      }
      const s = r.summary;
      process.stdout.write(`all steps       ${fmt(s.roc.toolErrorRatioPositive.all)}  ${fmt(s.grpo.toolErrorRatioPositive.all)}                ${fmt(s.roc.toolErrorRatioAll.all)}  ${fmt(s.grpo.toolErrorRatioAll.all)}          ${fmt(s.roc.passRate.all)}  ${fmt(s.grpo.passRate.all)}\n`);
      process.stdout.write(`last ${String(r.lastK).padEnd(3)}        ${fmt(s.roc.toolErrorRatioPositive.lastK)}  ${fmt(s.grpo.toolErrorRatioPositive.lastK)}                ${fmt(s.roc.toolErrorRatioAll.lastK)}  ${fmt(s.grpo.toolErrorRatioAll.lastK)}          ${fmt(s.roc.passRate.lastK)}  ${fmt(s.grpo.passRate.lastK)}\n`);
      for (const p of r.perSeed) process.stdout.write(`seed ${p.seed}: toolErr+ last ${r.lastK} RoC ${fmt(p.roc.toolErrorRatioPositive.lastK)}, GRPO ${fmt(p.grpo.toolErrorRatioPositive.lastK)}\n`);
      process.stdout.write(`files: ${r.files.join(', ')}\n`);
      process.exit(0);
    });
}
