import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');
const DESIGN = 'docs/design';

/** A citation of the design: `docs/design/<file>.md`, optionally `§N` (or `§N-M`) or `rule(s) N` (or `N-M`). */
const CITATION = /docs\/design\/([a-z-]+)\.md(?:\s*§\s*(\d+)(?:\s*[-–,]\s*§?(\d+))?|\s+rules?\s+(\d+)(?:\s*[-–,]\s*(\d+))?)?/g;
/** The old form, citing a folder outside the repository or a bare upper-case name. */
const OUTSIDE = /shared\/design|\b(?:PROTOCOL|ARCHITECTURE|GRADING|STYLE|SANDBOX)(?:\.md)?\s*(?:§|rules?\s+\d)/;

/** Sections (`## §N`) and numbered rules (`N. ` at the start of a line) a design file has. */
function anchorsOf(file: string): { sections: Set<number>; rules: Set<number> } {
  const text = readFileSync(file, 'utf8');
  return {
    sections: new Set([...text.matchAll(/^#+\s*§(\d+)\b/gm)].map((m) => Number(m[1]))),
    rules: new Set([...text.matchAll(/^(\d+)\.\s/gm)].map((m) => Number(m[1]))),
  };
}

/** Every broken citation in `text` (of file `where`): a missing design file, section or rule. */
export function brokenCitations(text: string, where: string, designDir = join(ROOT, DESIGN)): string[] {
  const bad: string[] = [];
  for (const m of text.matchAll(CITATION)) {
    const file = join(designDir, `${m[1]}.md`);
    if (!existsSync(file)) {
      bad.push(`${where}: ${m[0]} (no such file in ${DESIGN})`);
      continue;
    }
    const { sections, rules } = anchorsOf(file);
    const range = (a?: string, b?: string) => (a ? Array.from({ length: Number(b ?? a) - Number(a) + 1 }, (_, i) => Number(a) + i) : []);
    for (const n of range(m[2], m[3])) if (!sections.has(n)) bad.push(`${where}: ${m[0]} (${m[1]}.md has no §${n})`);
    for (const n of range(m[4], m[5])) if (!rules.has(n)) bad.push(`${where}: ${m[0]} (${m[1]}.md has no rule ${n})`);
  }
  for (const line of text.split('\n')) if (OUTSIDE.test(line)) bad.push(`${where}: cites a design outside the repository: ${line.trim().slice(0, 120)}`);
  return bad;
}

describe('code comments cite the design in docs/design, and every cited file and section exists', () => {
  it('flags a missing file, section or rule, and a citation of ../shared/design', () => {
    expect(brokenCitations('// docs/design/protocol.md §5 and grading.md', 'a.ts')).toEqual([]);
    expect(brokenCitations('// see docs/design/protocol.md §99', 'a.ts')).toEqual(['a.ts: docs/design/protocol.md §99 (protocol.md has no §99)']);
    expect(brokenCitations('// docs/design/grading.md rules 9-11', 'a.ts')).toEqual(['a.ts: docs/design/grading.md rules 9-11 (grading.md has no rule 11)']);
    expect(brokenCitations('// docs/design/nope.md', 'a.ts')).toEqual(['a.ts: docs/design/nope.md (no such file in docs/design)']);
    expect(brokenCitations('// PROTOCOL §6 (clip)', 'a.ts')).toHaveLength(1);
  });

  it('finds no broken citation in the repository', () => {
    const files = execFileSync('git', ['ls-files', 'libs', 'services', 'apps', 'test', 'infra', 'workers', 'README.md', 'docs'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(ts|tsx|mts|mjs|py|sh|md|yaml)$/.test(f) && !f.endsWith('design-citations.unit.spec.ts') && existsSync(join(ROOT, f)));
    let cited = 0;
    const bad: string[] = [];
    for (const f of files) {
      const text = readFileSync(join(ROOT, f), 'utf8');
      cited += [...text.matchAll(CITATION)].length;
      bad.push(...brokenCitations(text, f));
    }
    expect(bad).toEqual([]);
    expect(cited).toBeGreaterThan(100);
  });
});
