import type { Command } from 'commander';
import { join } from 'node:path';
import { checkGpuOverlays, GPU_OVERLAYS, loadRunConfig, OverlayMismatchError, presetNames, presetSummaries, refuseRemoteIgnoredFields, REPO_ROOT, RunRefusedError } from '@rstar/step-driver';
import { pairedGain, runHfTraining, runTraining, submitRemoteRun } from '@rstar/training';
import { writeRunReport, fmtPct } from '@rstar/training-report';
import { ProgressPrinter } from '../train/progress.printer';

/**
 * `rstar train [--preset P] [--config F] [--out DIR] [--remote [NATS_URL]] [--resume RUN] [--validate]`:
 * a GRPO-RoC run (standalone by default: PGlite + in-process bus + the built-in policy), then a report
 * folder with metrics.csv/json and SVG plots. `--remote` submits it to running services instead (NATS URL
 * from the option or RSTAR_NATS_URL). `--validate` only validates the config.
 */
export function register(program: Command): void {
  program
    .command('train')
    .description('run SFT + GRPO-RoC training (standalone by default) and write a report')
    .option('--preset <name>', `preset under configs/ (${presetNames().join(', ')})`, 'tiny')
    .option('--config <file>', 'YAML run config (wins over --preset)')
    .option('--out <dir>', 'run folder (default runs/<runId>); the report goes to <dir>/report')
    .option('--remote [natsUrl]', 'submit the run to running services over NATS instead of running it here (default URL: RSTAR_NATS_URL)')
    .option('--resume <runId>', 'resume run RUN from its archive (standalone: runs/<RUN>/events, or the same --out folder)')
    .option('--validate', 'validate the config and exit')
    .option('--verbose', 'also print the services\' info logs (JSON lines)')
    .option('--no-sft-cache', 'train the SFT stage even when this machine has a checkpoint of the same SFT settings, seed and code version')
    .addHelpText('after', () => {
      const list = presetSummaries();
      const w = Math.max(...list.map((p) => p.name.length));
      return `\nPresets (configs/<name>.yaml):\n${list.map((p) => `  ${p.name.padEnd(w)}  ${p.summary}`).join('\n')}\n\n` +
        'A second run with the same SFT settings, seed and code reuses the SFT checkpoint (runs/.sft-cache; --no-sft-cache retrains).\n' +
        'Config knobs: checkpoints.keepLast N keeps only the N newest step checkpoints (SFT always kept); trackers.mlflow / trackers.wandb log each step.\n';
    })
    .action(async (o: { preset: string; config?: string; out?: string; remote?: string | boolean; resume?: string; validate?: boolean; verbose?: boolean; sftCache: boolean }) => {
      // The summary lines and bars are the interface; the services' JSON info logs only with --verbose.
      if (!o.verbose && !process.env.RSTAR_LOG_LEVEL) process.env.RSTAR_LOG_LEVEL = 'warn';
      const { config, source } = loadRunConfig({ preset: o.preset, file: o.config });
      if (o.validate) {
        const steps = config.stages.reduce((a, s) => a + s.steps, 0);
        // A GPU config runs on the services of the GPU overlays: its paths and URLs must be what their pods see.
        let fits = '';
        // A config only the services run, or one meant for them, names nothing they would ignore.
        if (config.validateOnly || o.remote) {
          try {
            refuseRemoteIgnoredFields(config);
          } catch (e) {
            if (!(e instanceof RunRefusedError)) throw e;
            process.stderr.write(`rstar train: config ${source}: ${e.message}\n`);
            process.exitCode = 2;
            return;
          }
        }
        if (config.validateOnly && config.policy.kind === 'hf') {
          try {
            const checked = checkGpuOverlays(config, REPO_ROOT);
            if (checked) fits = `; its paths and URLs fit the pods of overlays ${checked.join(', ')}`;
            else process.stderr.write(`rstar train: paths and URLs not checked against ${GPU_OVERLAYS.map((g) => `infra/k8s/overlays/${g}`).join(' and ')}: no kustomize (install it: bash infra/local/install-infra-tools.sh)\n`);
          } catch (e) {
            if (!(e instanceof OverlayMismatchError)) throw e;
            process.stderr.write(`rstar train: config ${source}: ${e.message}\n`);
            process.exitCode = 2;
            return;
          }
        }
        process.stdout.write(`config ${source} is valid: "${config.name}", ${config.stages.length} RL stage(s), ${steps} steps${config.validateOnly ? ` (validateOnly: needs GPUs; submit it with --remote to services with engines and a trainer worker${fits})` : ''}\n`);
        return;
      }
      if (o.remote) {
        const natsUrl = typeof o.remote === 'string' ? o.remote : process.env.RSTAR_NATS_URL;
        if (!natsUrl) {
          process.stderr.write('rstar train: --remote needs the NATS URL of the services: pass --remote nats://HOST:4222 or set RSTAR_NATS_URL\n');
          process.exitCode = 2;
          return;
        }
        // Not refused here (the tiny presets carry an eval section and run remotely as they are), but never silent.
        try {
          refuseRemoteIgnoredFields(config);
        } catch (e) {
          if (!(e instanceof RunRefusedError)) throw e;
          process.stderr.write(`rstar train: warning: ${e.message} (field ${e.field})\n`);
        }
        await submitRemoteRun(config, {
          natsUrl, runId: o.resume, stream: process.env.RSTAR_STREAM || undefined, subjectPrefix: process.env.RSTAR_SUBJECT_PREFIX || undefined,
          onLine: (l) => process.stdout.write(`${l}\n`),
        });
        return;
      }
      const printer = new ProgressPrinter();
      try {
        // A Hugging Face policy runs on the trainer worker and reference engines, started here as processes.
        if (config.policy.kind === 'hf' && o.resume) throw new RunRefusedError('--resume of a Hugging Face run: submit it again with --remote --resume to the services', 'resume');
        const r = config.policy.kind === 'hf'
          ? await runHfTraining(config, { outDir: o.out, onProgress: printer.onProgress })
          : await runTraining(config, { runId: o.resume, resume: !!o.resume, outDir: o.out, reuseSft: o.sftCache, onProgress: printer.onProgress });
        printer.end();
        const files = writeRunReport(join(r.outDir, 'report'), r);
        const s = r.seconds;
        const gain = r.passAt1Before && r.passAt1After && r.passAt1Before.prompts > 1 ? pairedGain(r.passAt1Before, r.passAt1After) : null;
        process.stdout.write(
          `run ${r.runId} done in ${s.total.toFixed(0)} s (sft ${s.sft.toFixed(0)} s${r.sft?.reused ? ', reused' : ''}, rl ${s.rl.toFixed(0)} s): ` +
            `held-out pass@1 ${fmtPct(r.passAt1Before?.passAt1)} -> ${fmtPct(r.passAt1After?.passAt1)}` +
            `${gain ? ` (${gain.gain >= 0 ? '+' : ''}${(gain.gain * 100).toFixed(1)} ± ${(gain.se * 100).toFixed(1)} points, paired SE)` : ''}` +
            `\nreport: ${files.join(', ')}\n`,
        );
      } catch (e) {
        printer.end();
        if (e instanceof RunRefusedError) {
          process.stderr.write(`rstar train: ${e.message}\n`);
          process.exitCode = 2;
          return;
        }
        throw e;
      }
      // TensorFlow.js and the pool leave handles behind; the work is done and flushed.
      process.exit(process.exitCode ?? 0);
    });
}
