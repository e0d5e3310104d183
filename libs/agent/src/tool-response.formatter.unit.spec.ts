import { describe, expect, it } from 'vitest';
import type { ExecResult } from './ports';
import { formatToolResponse, resolveToolResponseLimits, TRUNCATION_MARKER, truncateMiddle } from './tool-response.formatter';

const exec = (over: Partial<ExecResult>): ExecResult => ({
  status: 'ok', stdout: '', stderr: '', exitCode: 0, signal: null, wallMs: 120, cpuMs: 100, truncated: false, ...over,
});

describe('formatToolResponse (docs/design/protocol.md §3)', () => {
  it('formats a success with stdout and stderr', () => {
    expect(formatToolResponse(exec({ stdout: '42\n', stderr: 'warn\n' }))).toBe('stdout: 42\nstderr: warn\nexecution time: 0.12s');
  });

  it('omits empty streams', () => {
    expect(formatToolResponse(exec({ stdout: '7\n' }))).toBe('stdout: 7\nexecution time: 0.12s');
    expect(formatToolResponse(exec({}))).toBe('execution time: 0.12s');
  });

  it('gives the reason of a failure but not for an ordinary runtime error', () => {
    expect(formatToolResponse(exec({ status: 'timeout', stdout: 'partial', wallMs: 4000, exitCode: null, signal: 'SIGKILL' }))).toBe(
      'reason: timeout\nstdout: partial\nexecution time: 4.00s',
    );
    expect(formatToolResponse(exec({ status: 'runtime_error', stderr: 'ZeroDivisionError: division by zero', exitCode: 1 }))).toBe(
      'stderr: ZeroDivisionError: division by zero\nexecution time: 0.12s',
    );
  });

  it('cuts the whole text to 256 chars keeping the first and last 128', () => {
    const out = formatToolResponse(exec({ stdout: 'a'.repeat(300) + 'END' }));
    expect(Array.from(out)).toHaveLength(128 + TRUNCATION_MARKER.length + 128);
    expect(out.startsWith('stdout: aaaa')).toBe(true);
    expect(out.endsWith('aaEND\nexecution time: 0.12s')).toBe(true);
    expect(out).toContain(TRUNCATION_MARKER);
  });

  it('caps each stream to streamMaxChars before formatting', () => {
    const out = formatToolResponse(exec({ stdout: 'x'.repeat(50) }), resolveToolResponseLimits({ streamMaxChars: 10, maxChars: 1000 }));
    expect(out).toBe(`stdout: ${'x'.repeat(10)}\nexecution time: 0.12s`);
  });
});

describe('truncateMiddle', () => {
  it('returns text within the limit unchanged', () => {
    expect(truncateMiddle('abc', 3, 1, 1)).toBe('abc');
  });

  it('never splits a non-ASCII code point', () => {
    const out = truncateMiddle('🙂'.repeat(10), 4, 2, 2);
    expect(out).toBe(`🙂🙂${TRUNCATION_MARKER}🙂🙂`);
  });

  it('rejects limits whose head and tail exceed the total, naming the field', () => {
    expect(() => resolveToolResponseLimits({ maxChars: 10, headChars: 8, tailChars: 8 })).toThrow(/headChars \+ tailChars/);
    expect(() => resolveToolResponseLimits({ maxChars: -1 })).toThrow(expect.objectContaining({ code: 'invalid_rollout_request', field: 'maxChars' }));
  });
});
