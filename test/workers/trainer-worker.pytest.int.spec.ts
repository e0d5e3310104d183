import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workersPythonForTests } from '@rstar/workers';

const ROOT = resolve(__dirname, '../..');
const python = workersPythonForTests();

/**
 * The Python half's own suite (workers/trainer/tests: loss vectors, batch v1/v2, checkpoints, the HTTP
 * routes, crash and resume, FSDP2 on 2 gloo ranks, the reference engine) runs inside `pnpm test`, so CI
 * fails when pytest fails. Under CI a missing workers/.venv fails here instead of skipping.
 */
describe.skipIf(!python)('workers/trainer pytest suite', () => {
  it('passes', async () => {
    const out: string[] = [];
    const code = await new Promise<number | null>((done, fail) => {
      const p = spawn(python!, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'workers/trainer'], {
        cwd: ROOT, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'],
      });
      p.stdout.on('data', (b: Buffer) => out.push(b.toString()));
      p.stderr.on('data', (b: Buffer) => out.push(b.toString()));
      p.on('error', fail);
      p.on('close', done);
    });
    const text = out.join('');
    // pytest's closing line, e.g. "59 passed in 150.2s".
    const summary = text.trim().split('\n').at(-1) ?? '';
    process.stdout.write(`workers/trainer pytest: ${summary}\n`);
    expect(code, text.slice(-8000)).toBe(0);
    expect(summary).toMatch(/\d+ passed/);
    expect(summary).not.toMatch(/failed|error/);
  }, 1_200_000);
});
