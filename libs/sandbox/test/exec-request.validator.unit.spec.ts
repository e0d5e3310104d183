import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, DEFAULT_MAXIMA, InvalidRequestError, MIN_MEMORY_MB, resolveRequest } from '../src';

const resolve = (raw: unknown) => resolveRequest(raw, DEFAULT_LIMITS, DEFAULT_MAXIMA);

describe('resolveRequest', () => {
  it('fills docs/design/protocol.md §3 defaults', () => {
    expect(resolve({ code: 'print(1)' })).toEqual({ code: 'print(1)', input: '', session: null, echo: true, timeoutMs: 4000, memoryMb: 384, outputChars: 1000 });
  });

  it('clamps huge and infinite limits to the maximum and tiny memory up to the minimum', () => {
    expect(resolve({ code: '', timeoutMs: Infinity }).timeoutMs).toBe(DEFAULT_MAXIMA.timeoutMs);
    expect(resolve({ code: '', timeoutMs: 1e9 }).timeoutMs).toBe(DEFAULT_MAXIMA.timeoutMs);
    expect(resolve({ code: '', memoryMb: 1 }).memoryMb).toBe(MIN_MEMORY_MB);
    expect(resolve({ code: '', memoryMb: 1e12 }).memoryMb).toBe(DEFAULT_MAXIMA.memoryMb);
  });

  it.each([
    [{ code: 'x', echo: 'yes' }, 'echo'],
    [{ code: 'x', timeoutMs: 0 }, 'timeoutMs'],
    [{ code: 'x', timeoutMs: -1 }, 'timeoutMs'],
    [{ code: 'x', timeoutMs: NaN }, 'timeoutMs'],
    [{ code: 'x', timeoutMs: '5' }, 'timeoutMs'],
    [{ code: 'x', memoryMb: 0 }, 'memoryMb'],
    [{ code: 'x', memoryMb: -1 }, 'memoryMb'],
    [{ code: 'x', input: 5 }, 'input'],
    [{ code: 'x', session: 'a b' }, 'session'],
    [{ code: 5 }, 'code'],
    [{}, 'code'],
    [null, 'request'],
    [[1], 'request'],
  ])('rejects %j naming %s', (raw, field) => {
    try {
      resolve(raw);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidRequestError);
      expect((e as InvalidRequestError).field).toBe(field);
      expect((e as InvalidRequestError).code).toBe('invalid_request');
    }
  });

  it('rejects code and input above the maxima', () => {
    expect(() => resolve({ code: 'x'.repeat(DEFAULT_MAXIMA.codeBytes + 1) })).toThrow(/code/);
    expect(() => resolve({ code: '', input: 'x'.repeat(DEFAULT_MAXIMA.inputBytes + 1) })).toThrow(/input/);
  });
});
