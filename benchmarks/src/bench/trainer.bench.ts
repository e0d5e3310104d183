import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * `pnpm bench trainer [--steps N] [--threads N] ...`: the PyTorch trainer worker's train-step tokens/s
 * (HTTP + v2 batch file + checkpoint, as the optimization service drives it) against a bare PyTorch loop
 * on the same batch in the same run, and the reference engine's generation tokens/s. The measuring is
 * done by workers/trainer/bench/trainer_bench.py (arguments are passed through); its last line is the
 * result: `{"bench":"trainer","worker_tokens_per_s","bare_tokens_per_s","protocol_overhead_ratio",
 * "engine_tokens_per_s"}` (goal: protocol_overhead_ratio >= 0.9). Needs the worker environment
 * (`bash workers/setup.sh`); RSTAR_WORKERS_PYTHON overrides the interpreter.
 */
export async function run(args: string[]): Promise<Record<string, unknown>> {
  const root = resolve(__dirname, '../../..');
  const python = process.env.RSTAR_WORKERS_PYTHON ?? resolve(root, 'workers/.venv/bin/python');
  if (!existsSync(python)) throw new Error(`no worker Python at ${python}: run \`bash workers/setup.sh\` first (or set RSTAR_WORKERS_PYTHON)`);
  const script = resolve(root, 'workers/trainer/bench/trainer_bench.py');
  const lines: string[] = [];
  await new Promise<void>((ok, fail) => {
    const p = spawn(python, [script, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    p.stdout.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        process.stdout.write(`${line}\n`);
      }
    });
    p.on('error', fail);
    p.on('close', (code) => (code === 0 ? ok() : fail(new Error(`trainer_bench.py exited with ${code}`))));
  });
  const last = lines.filter((l) => l.trim()).at(-1) ?? '';
  const result = JSON.parse(last) as Record<string, unknown>;
  if (result.bench !== 'trainer') throw new Error(`trainer_bench.py ended with ${last}, not the trainer result`);
  return result;
}
