import { CharTokenizer, type RolloutResult, type RolloutSpec, type Tokenizer } from '@rstar/agent';
import { Tokenizer as BuiltinTokenizer } from '@rstar/policy';
import { createEngines, EnginePool, SCHEDULING_POLICIES, type SchedulingPolicy } from '@rstar/engines';
import { runRolloutBatch } from '@rstar/rollouts';
import { SandboxPool } from '@rstar/sandbox';
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { CliInputError } from '../cli.errors';

interface RolloutCliOptions {
  dataset: string;
  n: string;
  engine: string[];
  json?: boolean;
  maxTokens: string;
  maxTurns: string;
  temperature: string;
  topP: string;
  seed: string;
  compact?: boolean;
  tokenizer: string;
  policy: string;
  limit?: string;
}

function positiveInt(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new CliInputError(`${flag} must be a positive integer, got "${v}"`);
  return n;
}

/**
 * Read `{id, problem, answer}` JSON lines (blank lines skipped; a numeric id is kept as its string).
 * @throws Error naming the file, the 1-based line and the problem (missing file, bad JSON, missing field).
 */
function readDataset(file: string): { id: string; problem: string; answer: string }[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliInputError(`cannot read --dataset ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message} (pass a JSON-lines file of {id, problem, answer})`);
  }
  const rows: { id: string; problem: string; answer: string }[] = [];
  text.split('\n').forEach((l, i) => {
    if (l.trim() === '') return;
    let row: { id?: unknown; problem?: unknown; answer?: unknown };
    try {
      row = JSON.parse(l) as typeof row;
    } catch (e) {
      throw new CliInputError(`${file}:${i + 1}: not valid JSON (${(e as Error).message}); expected {"id", "problem", "answer"}`);
    }
    if (typeof row !== 'object' || row === null || Array.isArray(row)) throw new CliInputError(`${file}:${i + 1}: expected a JSON object {"id", "problem", "answer"}`);
    if (typeof row.problem !== 'string') throw new CliInputError(`${file}:${i + 1}: field "problem" (a string) is missing`);
    const id = typeof row.id === 'string' || typeof row.id === 'number' ? String(row.id) : `row-${rows.length}`;
    rows.push({ id, problem: row.problem, answer: String(row.answer ?? '') });
  });
  return rows;
}

function transcript(r: RolloutResult, problemId: string): string {
  const head = `=== ${r.rolloutId} (${problemId}) engine=${r.engineId} turns=${r.turns} tool_calls=${r.toolCalls} tool_errors=${r.toolErrors} answers=${r.answerBlocks} format_violations=${r.formatViolations} finish=${r.finishReason}${r.truncated ? ' TRUNCATED' : ''} tokens=${r.responseTokenIds.length} (${r.lossMask.filter((m) => m === 1).length} model) ${r.wallMs} ms ===`;
  return `${head}\n${r.responseText}\n`;
}

/**
 * `rstar rollout`: run N rollouts of prompts from a dataset against the given engines (KV-budget
 * scheduling, the in-process Python sandbox as the tool) and print transcripts or JSON lines — for
 * debugging a model and the template. Prompts are used round-robin: rollout i uses prompt i mod rows.
 */
export function register(program: Command): void {
  program
    .command('rollout')
    .description('run N tool-integrated rollouts against inference engines and print the transcripts')
    .requiredOption('--dataset <file>', 'JSON lines with {id, problem, answer}')
    .option('--n <count>', 'number of rollouts', '4')
    .requiredOption('--engine <spec...>', 'engines as kind=url (kinds: sglang, vllm, builtin); a bare URL is sglang')
    .option('--json', 'print one JSON line per rollout instead of transcripts')
    .option('--max-tokens <n>', 'shared token budget per rollout', '8192')
    .option('--max-turns <n>', 'max assistant turns', '10')
    .option('--temperature <t>', 'sampling temperature', '1')
    .option('--top-p <p>', 'nucleus sampling', '1')
    .option('--seed <n>', 'base sampling seed (rollout i uses seed + i)', '0')
    .option('--compact', 'render prompts without the system turn (the tiny built-in policy)')
    .option('--tokenizer <kind>', 'builtin (the built-in policy tokenizer) or char', 'builtin')
    .option('--policy <name>', `scheduling policy (${SCHEDULING_POLICIES.join(', ')})`, 'kv-budget')
    .option('--limit <n>', 'use only the first n dataset rows')
    .action(async (o: RolloutCliOptions) => {
      const n = positiveInt(o.n, '--n');
      if (!(SCHEDULING_POLICIES as readonly string[]).includes(o.policy)) throw new CliInputError(`--policy must be one of ${SCHEDULING_POLICIES.join(', ')}, got "${o.policy}"`);
      if (o.tokenizer !== 'builtin' && o.tokenizer !== 'char') throw new CliInputError(`--tokenizer must be builtin or char, got "${o.tokenizer}"`);
      const temperature = Number(o.temperature);
      const topP = Number(o.topP);
      if (!(temperature >= 0)) throw new CliInputError(`--temperature must be >= 0, got "${o.temperature}"`);
      if (!(topP > 0 && topP <= 1)) throw new CliInputError(`--top-p must be in (0, 1], got "${o.topP}"`);
      const base = Number(o.seed);
      if (!Number.isInteger(base) || base < 0) throw new CliInputError(`--seed must be a non-negative integer, got "${o.seed}"`);
      const budget = { maxTokens: positiveInt(o.maxTokens, '--max-tokens'), maxTurns: positiveInt(o.maxTurns, '--max-turns') };
      let rows = readDataset(o.dataset);
      if (o.limit) rows = rows.slice(0, positiveInt(o.limit, '--limit'));
      if (rows.length === 0) throw new CliInputError(`${o.dataset} has no rows`);
      const tokenizer: Tokenizer = o.tokenizer === 'char' ? new CharTokenizer() : new BuiltinTokenizer();
      const pool = await EnginePool.create(createEngines(o.engine), o.policy as SchedulingPolicy, {
        onEngineState: (id, up, reason) => process.stderr.write(`engine ${id} ${up ? 'back in rotation' : 'out of rotation'}: ${reason}\n`),
      });
      const sandbox = new SandboxPool({ workers: 2 });
      await sandbox.start();
      const specs: RolloutSpec[] = Array.from({ length: n }, (_, i) => ({
        rolloutId: `cli:${i}`,
        problem: rows[i % rows.length].problem,
        sampling: { temperature, topP, seed: base + i },
        budget,
        compactPrompt: o.compact,
      }));
      try {
        await runRolloutBatch(specs, {
          pool,
          tokenizer,
          tools: { execute: (q) => sandbox.execute({ code: q.code, input: q.input, timeoutMs: q.timeoutMs, memoryMb: q.memoryMb, session: q.session ?? undefined }) },
          onDone: (r, i) => {
            const row = rows[i % rows.length];
            if (o.json) {
              const { turnRecords, toolCallRecords, ...rest } = r;
              process.stdout.write(JSON.stringify({ ...rest, promptId: row.id, gold: row.answer, turnRecords, toolCallRecords }) + '\n');
            } else process.stdout.write(transcript(r, row.id) + '\n');
          },
        });
      } finally {
        pool.close();
        await sandbox.close();
      }
    });
}
