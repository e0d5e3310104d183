import { describe, expect, it } from 'vitest';
import { Tokenizer } from '../tokenizer';
import { generateTasks } from './task.generator';
import { TOOL_ERROR_PHRASE_TOKENS, failingCode, planToolErrors, recovers, toolErrorTokenizerSpec } from './tool-error.variants';

describe('tool-error variants of the task family', () => {
  const tasks = generateTasks({ seed: 11, n: 600 });

  it('given rate 0, when planning, then no trace errs (the default SFT data is unchanged)', () => {
    expect(planToolErrors(tasks, 0, 3).every((p) => p === null)).toBe(true);
  });

  it('given rate 0.4, when planning, then about 40% of traces err, deterministically, with mistakes that apply to the task', () => {
    const plan = planToolErrors(tasks, 0.4, 3);
    expect(planToolErrors(tasks, 0.4, 3)).toEqual(plan);
    expect(planToolErrors(tasks, 0.4, 4)).not.toEqual(plan);
    const share = plan.filter((p) => p !== null).length / tasks.length;
    expect(share).toBeGreaterThan(0.34);
    expect(share).toBeLessThan(0.46);
    const kinds = new Set(plan.flatMap((p) => (p ? [p.kind] : [])));
    expect(kinds).toEqual(new Set(['wrong-variable', 'missing-import', 'unclosed-paren']));
    plan.forEach((p, i) => {
      if (!p) return;
      expect(p.code).not.toBe(tasks[i].code);
      if (p.kind === 'missing-import') expect(tasks[i].code.startsWith('import math; ')).toBe(true);
      if (p.kind === 'wrong-variable') expect(tasks[i].code.startsWith('import math; ')).toBe(false);
    });
  });

  it('given a program, when making each mistake, then the code has exactly that bug', () => {
    expect(failingCode({ id: 'a', code: 'print(284 * 604)' }, 'wrong-variable')).toBe('print(x * 604)');
    expect(failingCode({ id: 'a', code: 'print(284 * 604)' }, 'unclosed-paren')).toBe('print(284 * 604');
    expect(failingCode({ id: 'b', code: 'import math; print(math.gcd(12, 18))' }, 'missing-import')).toBe('print(math.gcd(12, 18))');
    expect(() => failingCode({ id: 'a', code: 'print(1)' }, 'missing-import')).toThrow(/missing-import/);
  });

  it('given the default kinds, when planning, then only recovering mistakes are drawn, exactly as before trailing-check existed', () => {
    const plan = planToolErrors(tasks, 0.4, 3);
    expect(plan.every((p) => p === null || recovers(p.kind))).toBe(true);
    expect(planToolErrors(tasks, 0.4, 3, ['wrong-variable', 'missing-import', 'unclosed-paren'])).toEqual(plan);
  });

  it('given kinds [trailing-check] and rate 0.5, when planning, then about half the traces print the answer and then fail on a leftover check', () => {
    const plan = planToolErrors(tasks, 0.5, 3, ['trailing-check']);
    const erring = plan.filter((p) => p !== null);
    expect(erring.length / tasks.length).toBeGreaterThan(0.44);
    expect(erring.length / tasks.length).toBeLessThan(0.56);
    plan.forEach((p, i) => {
      if (p) expect(p).toEqual({ kind: 'trailing-check', code: `${tasks[i].code}; print(check)` });
    });
    expect(recovers('trailing-check')).toBe(false);
    expect(failingCode({ id: 'a', code: 'print(284 * 604)' }, 'trailing-check')).toBe('print(284 * 604); print(check)');
  });

  it('rejects empty or unknown kinds, naming the field', () => {
    expect(() => planToolErrors(tasks, 0.5, 1, [])).toThrow(/toolErrorKinds/);
    expect(() => planToolErrors(tasks, 0.5, 1, ['typo' as never])).toThrow(/toolErrorKinds.*trailing-check|unknown tool-error kind "typo"/);
  });

  it('rejects a rate outside [0, 1], naming the field', () => {
    expect(() => planToolErrors(tasks, 1.5, 1)).toThrow(/toolErrorRate/);
    expect(() => planToolErrors(tasks, Number.NaN, 1)).toThrow(/toolErrorRate/);
  });

  it('the tool-error tokenizer extends the default one and round-trips error output in fewer tokens', () => {
    const spec = toolErrorTokenizerSpec();
    const base = Tokenizer.defaultSpec();
    expect(spec.pieces.slice(0, base.pieces.length)).toEqual(base.pieces);
    expect(spec.pieces.slice(base.pieces.length)).toEqual(TOOL_ERROR_PHRASE_TOKENS);
    const text = 'stderr: Traceback (most recent call last):\n  File "<code>", line 1, in <module>\n    print(x * 604)\n           ^\nNameError: name \'x\' is not defined\nexecution time: 0.01s';
    const tok = new Tokenizer(spec);
    expect(tok.decode(tok.encode(text))).toBe(text);
    expect(tok.encode(text).length).toBeLessThan(new Tokenizer().encode(text).length / 3);
  });
});
