import { describe, expect, it } from 'vitest';
import { classifyToolOutputDiff, type ToolOutput } from './tool-output.classifier';

const out = (o: Partial<ToolOutput>): ToolOutput => ({ status: 'ok', stdout: '', stderr: '', truncated: false, ...o });

describe('classifyToolOutputDiff', () => {
  it('returns null for equal outputs (timings are not compared)', () => {
    expect(classifyToolOutputDiff('print(1)', out({ stdout: '1\n' }), out({ stdout: '1\n' }))).toBeNull();
  });

  it('timeouts and kills depend on load: timing-dependent, not deterministic', () => {
    const d = classifyToolOutputDiff('while True: pass', out({ status: 'timeout' }), out({ status: 'ok', stdout: 'x' }))!;
    expect(d).toMatchObject({ cause: 'timing_dependent', deterministic: false });
    expect(d.fields).toEqual(['status', 'stdout']);
  });

  it('a program reading the clock or an unseeded RNG is timing-dependent', () => {
    const d = classifyToolOutputDiff('import random\nprint(random.random())', out({ stdout: '0.1\n' }), out({ stdout: '0.7\n' }))!;
    expect(d.cause).toBe('timing_dependent');
  });

  it('reprs that differ only in memory addresses are timing-dependent', () => {
    const d = classifyToolOutputDiff('print(object())', out({ stdout: '<object object at 0x7f12ab34cd50>\n' }), out({ stdout: '<object object at 0x7f99ee00aa10>\n' }))!;
    expect(d.cause).toBe('timing_dependent');
  });

  it('an import or attribute error on one side only points at a library version', () => {
    const d = classifyToolOutputDiff(
      'import numpy as np\nprint(np.product([2, 3]))',
      out({ stdout: '6\n' }),
      out({ status: 'runtime_error', stderr: "AttributeError: module 'numpy' has no attribute 'product'\n" }),
    )!;
    expect(d).toMatchObject({ cause: 'library_version', deterministic: true });
  });

  it('floats that differ only in their last digits point at a library version', () => {
    const d = classifyToolOutputDiff('print(sum(x))', out({ stdout: '0.30000000000000004\n' }), out({ stdout: '0.3000000000000001\n' }))!;
    expect(d.cause).toBe('library_version');
  });

  it('any other difference is a real change, with the first differing position', () => {
    const d = classifyToolOutputDiff('print(6*7)', out({ stdout: '42\n' }), out({ stdout: '43\n' }))!;
    expect(d).toMatchObject({ cause: 'real_change', deterministic: true, fields: ['stdout'] });
    expect(d.excerpt).toMatchObject({ field: 'stdout', at: 1 });
  });
});
