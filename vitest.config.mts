import { defineConfig } from 'vitest/config';
import swc from 'unplugin-swc';
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { SftWarmupSequencer } from './test/sequencer.mts';

// One alias per workspace package, read from tsconfig.base.json so the two never drift.
const paths: Record<string, string[]> = JSON.parse(
  readFileSync(resolve(import.meta.dirname, 'tsconfig.base.json'), 'utf8'),
).compilerOptions.paths;
const alias = Object.fromEntries(Object.entries(paths).map(([k, v]) => [k, resolve(import.meta.dirname, v[0])]));
const roots = ['apps', 'libs', 'services', 'test'];

export default defineConfig({
  // swc keeps decorator metadata for NestJS; esbuild (vite's default) drops it.
  plugins: [swc.vite({ module: { type: 'es6' } })],
  resolve: { alias },
  test: {
    globals: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // CI reads the JSON report to print the closing `N passed, N failed` line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.rstar/test-results.json' },
    maxWorkers: 2,
    // Files that need the shared tiny SFT checkpoint run last, while a background process trains it (test/sequencer.mts).
    sequence: { sequencer: SftWarmupSequencer },
    exclude: ['**/node_modules/**', '**/dist/**'],
    // `pnpm test` runs both projects; `pnpm test:unit` only the unit one, which needs no Postgres or NATS.
    projects: [
      { extends: true, test: { name: 'unit', include: roots.map((r) => `${r}/**/*.unit.spec.ts`) } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: roots.flatMap((r) => [`${r}/**/*.int.spec.ts`, `${r}/**/*.e2e.spec.ts`]),
          // Starts the real Postgres and NATS the integration tests use, when they are not running.
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
