#!/usr/bin/env node
import 'reflect-metadata';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `pnpm bench NAME [args]`: runs `bench/NAME.bench.ts`, whose `run(args)` measures the feature and its
 * baseline in the same run and returns the figures; the last line printed is that JSON object.
 */
async function main(): Promise<void> {
  const [name, ...args] = process.argv.slice(2);
  const dir = join(__dirname, 'bench');
  const known = readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).map((f) => f.replace('.bench.ts', ''));
  if (!name || !existsSync(join(dir, `${name}.bench.ts`))) {
    process.stderr.write(`usage: pnpm bench NAME — one of: ${known.join(', ')}\n`);
    process.exit(2);
  }
  const mod = await import(join(dir, `${name}.bench.ts`));
  const result = await mod.run(args);
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
