import { gradeJsonLine, SympySandboxBackend, warmUp, type SymbolicBackend } from '@rstar/grader';
import { SandboxPool } from '@rstar/sandbox';
import type { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { assertReadableFile } from '../input-file';

/**
 * `rstar grade [file]`: reads JSON lines `{id, prediction, gold}` from the file or stdin and writes
 * `{id, correct, extracted, rule, ms}` per line, in order; a malformed line gets an error result naming
 * the field and the run continues. `--symbolic` sends checks the fast path cannot decide to sympy in
 * the sandbox under `--timeout-ms`.
 */
export function register(program: Command): void {
  program
    .command('grade')
    .argument('[file]', 'JSON-lines file (default: stdin)')
    .description('grade JSON lines {id, prediction, gold} (file or stdin) -> {id, correct, extracted, rule, ms}')
    .option('--symbolic', 'offload undecided symbolic checks to sympy in the sandbox')
    .option('--timeout-ms <ms>', 'time limit of one symbolic check', '4000')
    .action(async (file: string | undefined, opts: { symbolic?: boolean; timeoutMs: string }) => {
      const timeoutMs = Number(opts.timeoutMs);
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new Error(`--timeout-ms must be a positive number of milliseconds, got "${opts.timeoutMs}"`);
      if (file !== undefined) assertReadableFile(file);
      warmUp();
      let pool: SandboxPool | null = null;
      let symbolic: SymbolicBackend | undefined;
      if (opts.symbolic) {
        pool = new SandboxPool({ workers: 1 });
        await pool.start();
        symbolic = new SympySandboxBackend(pool);
      }
      try {
        const input = file ? createReadStream(file, 'utf8') : process.stdin;
        const lines = createInterface({ input, crlfDelay: Infinity });
        let n = 0;
        for await (const line of lines) {
          n++;
          if (!line.trim()) continue;
          const r = await gradeJsonLine(line, n, { symbolic, timeoutMs });
          process.stdout.write(JSON.stringify(r) + '\n');
        }
      } finally {
        await pool?.close();
      }
    });
}

