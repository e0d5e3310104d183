#!/usr/bin/env node
import 'reflect-metadata';
import { Command } from 'commander';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The `rstar` command. Every file `commands/<name>.command.ts` exports `register(program)`, which adds
 * its sub-command; discovering them keeps each command in its own file with one job.
 */
async function main(): Promise<void> {
  const program = new Command('rstar')
    .description('rstar: event-sourced agentic RL (GRPO-RoC) with a Python code tool')
    .version(await version(), '-V, --version', 'print the version and the code version runs record (git commit, or RSTAR_CODE_VERSION)')
    .showHelpAfterError();
  const dir = join(__dirname, 'commands');
  const files = readdirSync(dir).filter((f) => COMMAND_FILE.test(f)).sort();
  // `rstar <name> ...` loads only `<name>.command.*`: each command file pulls in its own libraries
  // (training, event store, engines ...), and loading all of them cost ~3.5 s of CPU per start under
  // tsx that a single command never uses. Top-level help, --version and unknown names load them all.
  const first = process.argv[2];
  const named = files.filter((f) => f.replace(COMMAND_FILE, '') === first);
  for (const f of named) (await import(join(dir, f))).register(program);
  if (!program.commands.some((c) => c.name() === first)) {
    for (const f of files.filter((x) => !named.includes(x))) (await import(join(dir, f))).register(program);
  }
  await program.parseAsync(process.argv);
}

/** A command file's name: `<command>.command.ts` (or `.js` once built). */
const COMMAND_FILE = /\.command\.(ts|js)$/;

/**
 * The CLI package's version, plus the code version runs record in `RunStarted` (`codeVersion`: the git
 * commit, `-dirty` when changed, or `RSTAR_CODE_VERSION`). That needs git and the training lib, so it is
 * only worked out when `--version` is asked for.
 */
async function version(): Promise<string> {
  if (!process.argv.slice(2).some((a) => a === '-V' || a === '--version')) return 'rstar';
  let v = 'unknown';
  try {
    v = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    // A bundled CLI without its package.json still answers --version.
  }
  const { codeVersion } = await import('@rstar/training');
  return `rstar ${v} (code version ${codeVersion()})`;
}

main().catch((e) => {
  process.stderr.write(`rstar: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
