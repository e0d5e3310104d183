#!/usr/bin/env node
// Build one service into dist/services/<name>/: tsc (keeps decorator metadata, which Nest injects by;
// esbuild-based tools drop it) over the service and every lib it imports, then tsc-alias turns the
// `@rstar/*` path aliases into relative requires, then the runtime assets the libs read from disk (the
// sandbox's Python package, the run presets) are copied to the same relative places. The result runs
// with plain `node dist/services/<name>/services/<name>/src/main.js`, from the repo or copied alone.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
const name = process.argv[2];
if (!name || !existsSync(join(root, 'services', name, 'tsconfig.build.json'))) {
  console.error(`usage: node infra/build/build-service.mjs SERVICE (one of the folders in services/ with a tsconfig.build.json), got "${name ?? ''}"`);
  process.exit(2);
}
const out = join(root, 'dist', 'services', name);
const project = join(root, 'services', name, 'tsconfig.build.json');
rmSync(out, { recursive: true, force: true });
const bin = (b) => join(root, 'node_modules', '.bin', b);
execFileSync(bin('tsc'), ['-p', project], { stdio: 'inherit', cwd: root });
execFileSync(bin('tsc-alias'), ['-p', project], { stdio: 'inherit', cwd: root });
// Assets, only where the compiled libs will look for them.
const assets = [
  ['libs/sandbox/python', existsSync(join(out, 'libs/sandbox'))],
  ['configs', existsSync(join(out, 'libs/step-driver'))],
];
for (const [rel, needed] of assets) if (needed) cpSync(join(root, rel), join(out, rel), { recursive: true, filter: (p) => !p.includes('__pycache__') && !p.includes('/python/tests') });
console.log(`build-service: ${name} -> ${out}`);
