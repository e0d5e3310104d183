#!/usr/bin/env node
import 'reflect-metadata';
import { Command } from 'commander';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The `rstar` command. Every file `commands/<name>.command.ts` exports `register(program)`, which adds
 * its sub-command; discovering them keeps each command in its own file with one job.
 */
async function main(): Promise<void> {
  const program = new Command('rstar')
    .description('rstar: event-sourced agentic RL (GRPO-RoC) with a Python code tool')
    .showHelpAfterError();
  const dir = join(__dirname, 'commands');
  for (const f of readdirSync(dir).filter((f) => /\.command\.(ts|js)$/.test(f)).sort()) {
    const mod = await import(join(dir, f));
    mod.register(program);
  }
  await program.parseAsync(process.argv);
}

main().catch((e) => {
  process.stderr.write(`rstar: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
