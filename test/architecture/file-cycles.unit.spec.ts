import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    if (e === 'node_modules' || e === 'dist' || e === 'fixtures' || e.startsWith('.')) continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (/\.tsx?$/.test(e) && !e.endsWith('.d.ts') && !/\.spec\.tsx?$/.test(e)) out.push(p);
  }
  return out;
}

/**
 * The file graph of `files`: each file's relative imports, found by TypeScript's own pre-parser, so
 * `import type`, `export ... from` and dynamic `import()` all count (a type-only cycle still ties two
 * files together for a reader and for a refactoring).
 */
export function fileGraph(files: Map<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const resolveSpec = (from: string, spec: string): string | null => {
    const base = join(dirname(from), spec);
    for (const c of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx'), base.replace(/\.js$/, '.ts')]) if (files.has(c)) return c;
    return null;
  };
  for (const [f, text] of files) {
    const deps = ts.preProcessFile(text, true, true).importedFiles.map((i) => i.fileName).filter((s) => s.startsWith('.'));
    graph.set(f, [...new Set(deps.map((d) => resolveSpec(f, d)).filter((t): t is string => t !== null && t !== f))]);
  }
  return graph;
}

/** The strongly connected components with more than one file (Tarjan's algorithm), each sorted. */
export function cyclesOf(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const strong = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const comp: string[] = [];
      for (let w = ''; w !== v; ) {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      }
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) strong(v);
  return out;
}

describe('no file-level import cycle in libs/, services/ or apps/ (type-only imports included; specs excluded)', () => {
  it('finds a cycle when there is one, type-only or through an index', () => {
    const files = new Map([
      ['/x/a.ts', "import type { B } from './b';\nexport interface A { b: B }"],
      ['/x/b.ts', "export type { A } from './a';\nexport interface B { n: number }"],
      ['/x/c.ts', "import { d } from './d/index';\nexport const c = 1;"],
      ['/x/d/index.ts', "export const d = () => import('../c');"],
      ['/x/e.ts', "import { a } from './a';\nexport const e = a;"],
    ]);
    expect(cyclesOf(fileGraph(files))).toEqual([['/x/a.ts', '/x/b.ts'], ['/x/c.ts', '/x/d/index.ts']]);
  });

  it('the repository has none', () => {
    const roots = ['libs', 'services', 'apps'].map((r) => join(ROOT, r)).filter(existsSync);
    const files = new Map(roots.flatMap(sources).map((f) => [f, readFileSync(f, 'utf8')]));
    expect(files.size).toBeGreaterThan(300);
    const cycles = cyclesOf(fileGraph(files)).map((c) => c.map((f) => relative(ROOT, f)).join(' <-> '));
    expect(cycles).toEqual([]);
  });
});
