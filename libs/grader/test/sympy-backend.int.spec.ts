import { SandboxPool } from '@rstar/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradeAsync, SympySandboxBackend } from '../src';

describe('gradeAsync with sympy in the real sandbox', () => {
  let pool: SandboxPool;
  let backend: SympySandboxBackend;
  beforeAll(async () => {
    pool = new SandboxPool({ workers: 1 });
    await pool.start();
    backend = new SympySandboxBackend(pool);
  });
  afterAll(async () => {
    await pool?.close();
  });

  it('decides what the fast path leaves undecided (sin(pi) = 0, tiny e^-1000 != 0)', async () => {
    expect(await gradeAsync('\\boxed{\\sin(\\pi)}', '0', { symbolic: backend })).toMatchObject({ correct: true, rule: 'sympy' });
    expect(await gradeAsync('\\boxed{e^{-1000}}', '0', { symbolic: backend })).toMatchObject({ correct: false, rule: 'sympy' });
  });

  it('reads i as the imaginary unit when it is the only name (e^{i pi} = -1 is exact, not a tolerance)', async () => {
    expect(await gradeAsync('\\boxed{e^{i\\pi}}', '-1', { symbolic: backend })).toMatchObject({ correct: true, rule: 'sympy' });
    expect(await gradeAsync('\\boxed{e^{i\\pi/2}}', '-1', { symbolic: backend })).toMatchObject({ correct: false });
  });

  it('bounds a check that would hang: a huge power ends false with rule timeout', async () => {
    const v = await gradeAsync('\\boxed{2003^{2002^{2001}}}', '1', { symbolic: backend, timeoutMs: 1500 });
    expect(v).toMatchObject({ correct: false, rule: 'timeout' });
  });
});
