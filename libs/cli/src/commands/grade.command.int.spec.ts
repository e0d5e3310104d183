import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/** `rstar grade` as a user runs it (a real process): JSON lines, `--explain`, the warning for a gold that does not parse. */
const ROOT = resolve(__dirname, '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'rstar-grade-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LINES = [
  { id: 'plain-gold', prediction: 'so $\\boxed{\\frac{\\sqrt{2}}{2}}$', gold: '1/sqrt(2)' },
  { id: 'bad-gold', prediction: '\\boxed{5}', gold: '\\frac{1}{' },
  { id: 'rounded', prediction: 'The final answer is $\\boxed{0.27}$.', gold: '\\frac{3}{11}', problem: 'What is 3/11? Express your answer as a decimal to the nearest hundredth.' },
  { id: 'hedge', prediction: '$\\boxed{x = 3 \\\\ x = 6}$', gold: '6' },
];

function rstarGrade(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const f = join(dir, `in-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(f, LINES.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const r = spawnSync(join(ROOT, 'node_modules/.bin/tsx'), ['libs/cli/src/main.ts', 'grade', f, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('rstar grade', () => {
  it('writes one JSON verdict per line; a gold that does not parse is gold_unparsed with a warning, never a silent false', () => {
    const r = rstarGrade([]);
    expect(r.code, r.stderr).toBe(0);
    const out = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: string; correct: boolean; rule: string; warning?: string });
    expect(out.map((o) => [o.id, o.correct, o.rule])).toEqual([
      ['plain-gold', true, 'numeric'],
      ['bad-gold', false, 'gold_unparsed'],
      ['rounded', true, 'rounding'],
      ['hedge', false, 'hedged'],
    ]);
    expect(out[1].warning).toMatch(/does not parse/);
    expect(r.stderr).toMatch(/warning: id bad-gold: .*does not parse/);
    expect(r.stderr).toMatch(/1 gold answer\(s\) did not parse/);
  });

  it('--explain prints, per answer, the extracted box, the normal forms compared and the rule', () => {
    const r = rstarGrade(['--explain']);
    expect(r.code, r.stderr).toBe(0);
    const blocks = r.stdout.trim().split(/\n(?=\[)/);
    expect(blocks).toHaveLength(4);
    expect(blocks[0]).toMatch(/^\[plain-gold\] correct {2}rule=numeric/);
    expect(blocks[0]).toContain('extracted:  \\frac{\\sqrt{2}}{2}');
    expect(blocks[0]).toContain('gold:       \\frac{1}{\\sqrt{2}}');
    expect(blocks[0]).toMatch(/compared: {3}\\frac\{\\sqrt\{2\}\}\{2\} {2}vs {2}\\frac\{1\}\{\\sqrt\{2\}\}/);
    expect(blocks[1]).toMatch(/^\[bad-gold\] wrong {2}rule=gold_unparsed/);
    expect(blocks[1]).toMatch(/warning: .*does not parse/);
    expect(blocks[2]).toMatch(/rule=rounding/);
    expect(blocks[3]).toMatch(/^\[hedge\] wrong {2}rule=hedged/);
  });
});
