import { gradeJsonLine, SympySandboxBackend, warmUp, type GradeLineResult, type SymbolicBackend } from '@rstar/grader';
import { SandboxPool } from '@rstar/sandbox';
import type { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { assertReadableFile } from '../input-file';
import { CliInputError } from '../cli.errors';

/** The readable block `--explain` prints for one answer: verdict and rule, extracted box, normal forms, compared forms. */
export function explainLine(r: GradeLineResult): string {
  const show = (s: string | null | undefined) => (s === null || s === undefined ? '(none)' : s.replace(/\s+/g, ' '));
  if (r.error) return `[${String(r.id)}] invalid input: ${r.error}\n`;
  const lines = [
    `[${String(r.id)}] ${r.correct ? 'correct' : 'wrong'}  rule=${r.rule}  (${r.ms} ms)`,
    `  extracted:  ${show(r.extracted)}`,
    `  normalized: ${show(r.normalizedPrediction)}`,
    `  gold:       ${show(r.normalizedGold)}`,
  ];
  if (r.compared) lines.push(`  compared:   ${show(r.compared.prediction)}  vs  ${show(r.compared.gold)}`);
  if (r.warning) lines.push(`  warning:    ${r.warning}`);
  return lines.join('\n') + '\n';
}

/**
 * `rstar grade [file]`: reads JSON lines `{id, prediction, gold, problem?}` from the file or stdin and
 * writes `{id, correct, extracted, rule, ms}` per line, in order; a malformed line gets an error result
 * naming the field and the run continues. A gold that does not parse is graded false with rule
 * `gold_unparsed`, a `warning` field and a warning on stderr (never silently false). `--explain` prints, per answer, the
 * extracted box, the normal forms compared and the rule instead of JSON. `--symbolic` sends checks the fast
 * path cannot decide to sympy in the sandbox under `--timeout-ms`.
 */
export function register(program: Command): void {
  program
    .command('grade')
    .argument('[file]', 'JSON-lines file (default: stdin)')
    .description('grade JSON lines {id, prediction, gold, problem?} (file or stdin) -> {id, correct, extracted, rule, ms}')
    .option('--symbolic', 'offload undecided symbolic checks to sympy in the sandbox')
    .option('--timeout-ms <ms>', 'time limit of one symbolic check', '4000')
    .option('--explain', 'print, per answer, the extracted box, the normal forms compared and the rule (readable text instead of JSON)')
    .action(async (file: string | undefined, opts: { symbolic?: boolean; timeoutMs: string; explain?: boolean }) => {
      const timeoutMs = Number(opts.timeoutMs);
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new CliInputError(`--timeout-ms must be a positive number of milliseconds, got "${opts.timeoutMs}"`);
      if (file !== undefined) assertReadableFile(file);
      warmUp();
      let pool: SandboxPool | null = null;
      let symbolic: SymbolicBackend | undefined;
      if (opts.symbolic) {
        pool = new SandboxPool({ workers: 1 });
        await pool.start();
        symbolic = new SympySandboxBackend(pool);
      }
      let unparsedGolds = 0;
      try {
        const input = file ? createReadStream(file, 'utf8') : process.stdin;
        const lines = createInterface({ input, crlfDelay: Infinity });
        let n = 0;
        for await (const line of lines) {
          n++;
          if (!line.trim()) continue;
          const r = await gradeJsonLine(line, n, { symbolic, timeoutMs, explain: opts.explain });
          if (r.warning) {
            unparsedGolds++;
            process.stderr.write(`warning: id ${String(r.id)}: ${r.warning}\n`);
          }
          if (opts.explain) process.stdout.write(explainLine(r));
          else process.stdout.write(JSON.stringify(r) + '\n');
        }
      } finally {
        await pool?.close();
      }
      if (unparsedGolds > 0) process.stderr.write(`warning: ${unparsedGolds} gold answer(s) did not parse (rule gold_unparsed); their verdicts are false until the golds are fixed\n`);
    });
}
