import { createRegrader, indexRun, parseJsonl, toJsonl, verifyRun } from '@rstar/replay';
import { generateSyntheticRun } from '@rstar/testing';
import type { RstarEvent } from '@rstar/contracts';
import { loadavg } from 'node:os';
import { intArg } from './bench.args';

/**
 * `pnpm bench replay [--prompts 512] [--samples 32] [--keep 16] [--chars 240]`: records one step of
 * prompts x samples rollouts (16,384 by default, rStar2's 512 x 32) with the load generator of
 * @rstar/replay (real grader, RoC resampler and batch builder over handmade multi-turn tool rollouts),
 * then times `verifyRun` without re-execution (after one untimed warm-up run): re-grade every answer,
 * re-decide every group, rebuild and hash the training batch; reported per wall second and per CPU
 * second, with the load average, because the machine's cores are shared. Baseline in the same run: the same verify with the grader's memo disabled
 * (one grade per rollout, as reward-grading does). Also: parsing the recorded JSON lines (`parseEvent`,
 * zod) on a slice, the cost of reading a history from a file. Goal: verify >= 5,000 rollouts/s.
 */
export async function run(args: string[]): Promise<object> {
  const opt = (name: string, dflt: number): number => intArg(args, `--${name}`, dflt);
  const prompts = opt('prompts', 512);
  const samples = opt('samples', 32);
  const keep = opt('keep', 16);
  const chars = opt('chars', 240);
  const rollouts = prompts * samples;
  process.stderr.write(`replay bench: generating one step of ${prompts} x ${samples} = ${rollouts} rollouts...\n`);
  let t = performance.now();
  const events: RstarEvent[] = await generateSyntheticRun({ grade: createRegrader(), runId: 'bench-replay', seed: 1, steps: 1, promptsPerStep: prompts, samples, keep, responseChars: chars });
  const generateS = (performance.now() - t) / 1000;
  let tokens = 0;
  for (const e of events) if (e.type === 'RolloutCompleted') tokens += e.data.promptTokenIds.length + e.data.responseTokenIds.length;
  process.stderr.write(`  ${events.length} events in ${generateS.toFixed(1)} s; verifying (no re-execution)...\n`);

  // Warm-up on the same data (JIT, heap growth), then the timed run: wall time and CPU time (the CPU
  // figure is what one uncontended core gives; this machine's cores are shared).
  await verifyRun(indexRun(events));
  t = performance.now();
  const cpu0 = process.cpuUsage();
  const report = await verifyRun(indexRun(events));
  const verifyS = (performance.now() - t) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const verifyCpuS = (cpu.user + cpu.system) / 1e6;
  if (report.checked.rewards !== rollouts) throw new Error(`verify checked ${report.checked.rewards} rewards, expected ${rollouts}`);
  process.stderr.write(`  verify: ${verifyS.toFixed(2)} s, ${report.deterministicDifferences} deterministic differences; baseline (no grader memo)...\n`);

  t = performance.now();
  const baseline = await verifyRun(indexRun(events), { grade: createRegrader({ cache: false }) });
  const baselineS = (performance.now() - t) / 1000;

  const slice = events.slice(0, Math.ceil(events.length / 8));
  const sliceRollouts = slice.filter((e) => e.type === 'RolloutCompleted').length;
  const text = toJsonl(slice);
  t = performance.now();
  parseJsonl(text);
  const parseS = (performance.now() - t) / 1000;

  return {
    bench: 'replay',
    verify_rollouts_per_s: Math.round(rollouts / verifyS),
    goal_rollouts_per_s: 5000,
    verify_rollouts_per_cpu_s: Math.round(rollouts / verifyCpuS),
    load_average_1m: Number(loadavg()[0].toFixed(1)),
    baseline_uncached_grader_rollouts_per_s: Math.round(rollouts / baselineS),
    parse_jsonl_rollouts_per_s: Math.round(sliceRollouts / parseS),
    rollouts,
    events: events.length,
    tokens_per_rollout: Math.round(tokens / rollouts),
    groups_checked: report.checked.groups,
    batch_sequences: events.find((e) => e.type === 'StepOptimized')?.data && (events.find((e) => e.type === 'StepOptimized') as RstarEvent<'StepOptimized'>).data.rollouts,
    verify_s: Number(verifyS.toFixed(3)),
    verify_phase_ms: Object.fromEntries(Object.entries(report.timingsMs).map(([k, v]) => [k, Math.round(v)])),
    baseline_s: Number(baselineS.toFixed(3)),
    generate_s: Number(generateS.toFixed(1)),
    deterministic_differences: report.deterministicDifferences + baseline.deterministicDifferences,
  };
}
