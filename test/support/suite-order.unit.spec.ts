import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { heaviestFirst, SUITE_WEIGHTS_S } from './suite-order.mjs';

const ROOT = resolve(__dirname, '../..');
const spec = (path: string) => ({ moduleId: resolve(ROOT, path) });
const paths = (files: Array<{ moduleId: string }>) => files.map((f) => f.moduleId.slice(ROOT.length + 1));

describe('the suite order', () => {
  it('puts the files of known weight first, heaviest first, and keeps the given order of the rest', () => {
    const given = ['libs/a/x.unit.spec.ts', 'test/e2e/train-standalone.e2e.spec.ts', 'libs/b/y.int.spec.ts', 'test/e2e/train-hf-tiny.e2e.spec.ts', 'test/e2e/train-learning.e2e.spec.ts'];
    expect(paths(heaviestFirst(given.map(spec), ROOT))).toEqual([
      'test/e2e/train-hf-tiny.e2e.spec.ts', 'test/e2e/train-learning.e2e.spec.ts', 'test/e2e/train-standalone.e2e.spec.ts', 'libs/a/x.unit.spec.ts', 'libs/b/y.int.spec.ts',
    ]);
  });

  it('names only spec files that exist (a renamed file would silently lose its place)', () => {
    for (const path of Object.keys(SUITE_WEIGHTS_S)) expect(existsSync(resolve(ROOT, path)), path).toBe(true);
  });
});
