import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { ESLint } from 'eslint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');

interface Project {
  name: string;
  dir: string;
  tags: string[];
  packageName: string;
  declared: string[];
}

function projects(): Project[] {
  const dirs = [...['apps', 'libs', 'services'].filter((p) => existsSync(join(ROOT, p))).flatMap((p) => readdirSync(join(ROOT, p)).map((d) => `${p}/${d}`)), 'test'];
  return dirs
    .filter((d) => existsSync(join(ROOT, d, 'project.json')))
    .map((d) => {
      const prj = JSON.parse(readFileSync(join(ROOT, d, 'project.json'), 'utf8'));
      const pkg = JSON.parse(readFileSync(join(ROOT, d, 'package.json'), 'utf8'));
      return { name: prj.name, dir: d, tags: prj.tags ?? [], packageName: pkg.name, declared: Object.keys(pkg.dependencies ?? {}).filter((k) => k.startsWith('@rstar/')) };
    });
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    if (e === 'node_modules' || e === 'dist' || e === 'fixtures') continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (p.endsWith('.ts') || p.endsWith('.tsx')) out.push(p);
  }
  return out;
}

/** Every `@rstar/*` package a project imports: value, type-only, re-exports and dynamic imports alike. */
function importsOf(p: Project): Set<string> {
  const re = /(?:from|import)\s*\(?\s*'(@rstar\/[a-z-]+)'/g;
  const found = new Set<string>();
  for (const f of tsFiles(join(ROOT, p.dir))) for (const m of readFileSync(f, 'utf8').matchAll(re)) found.add(m[1]);
  found.delete(p.packageName);
  return found;
}

const ALLOWED: Record<string, string[]> = {
  'type:lib': ['type:lib'],
  'type:app': ['type:lib'],
  'type:ui': ['type:lib'],
  'type:cli': ['type:lib'],
  'type:test-support': ['type:lib'],
  'type:e2e': ['type:lib', 'type:test-support'],
};

describe('module boundaries: libs never import services or the CLI, no cycles, declared dependencies', () => {
  const all = projects();
  const byPackage = new Map(all.map((p) => [p.packageName, p]));
  const edges = new Map(all.map((p) => [p.name, [...importsOf(p)].map((d) => byPackage.get(d)?.name ?? `unknown:${d}`)]));
  let graphDir = '';

  beforeAll(() => {
    graphDir = mkdtempSync(join(tmpdir(), 'rstar-graph-'));
  });
  afterAll(() => rmSync(graphDir, { recursive: true, force: true }));

  it('every import resolves to a workspace project, and each tag imports only what it may', () => {
    const bad: string[] = [];
    for (const p of all) {
      const kind = p.tags.find((t) => t in ALLOWED);
      expect(kind, `${p.dir}/project.json has a type:* tag`).toBeDefined();
      for (const dep of edges.get(p.name)!) {
        const target = all.find((q) => q.name === dep);
        if (!target) bad.push(`${p.name} imports ${dep}`);
        // Spec files may use the shared test helpers; the ESLint rule below checks that per file.
        else if (!ALLOWED[kind!].includes(target.tags[0]) && !(target.tags[0] === 'type:test-support' && kind !== 'type:cli')) bad.push(`${p.name} (${kind}) imports ${dep} (${target.tags[0]})`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('has no import cycle between projects (type-only imports included)', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (n: string, path: string[]) => {
      if (state.get(n) === 'done') return;
      if (state.get(n) === 'open') {
        cycles.push([...path.slice(path.indexOf(n)), n].join(' -> '));
        return;
      }
      state.set(n, 'open');
      for (const d of edges.get(n) ?? []) visit(d, [...path, n]);
      state.set(n, 'done');
    };
    for (const p of all) visit(p.name, []);
    expect(cycles).toEqual([]);
  });

  it('every project has exactly one scope:* tag and imports no lib of a scope above it (eslint.config.mjs SCOPE_MAY_USE)', async () => {
    const { SCOPE_MAY_USE } = (await import(join(ROOT, 'eslint.config.mjs'))) as { SCOPE_MAY_USE: Record<string, string[]> };
    const scopeOf = (p: Project) => p.tags.filter((t) => t.startsWith('scope:'));
    for (const p of all) expect(scopeOf(p), `${p.dir}/project.json: one scope:* tag, one of ${Object.keys(SCOPE_MAY_USE).join(', ')}`).toEqual([expect.toBeOneOf(Object.keys(SCOPE_MAY_USE))]);
    const above: string[] = [];
    for (const p of all) {
      const [scope] = scopeOf(p);
      for (const dep of edges.get(p.name)!) {
        const target = all.find((q) => q.name === dep);
        const [depScope] = target ? scopeOf(target) : [];
        if (target && !SCOPE_MAY_USE[scope].includes(depScope)) above.push(`${p.name} (${scope}) imports ${dep} (${depScope})`);
      }
    }
    expect(above).toEqual([]);
  });

  it("each project's package.json declares exactly the workspace packages it imports", () => {
    for (const p of all) expect([...p.declared].sort(), `${p.dir}/package.json dependencies`).toEqual([...importsOf(p)].sort());
  });

  it('the Nx project graph has the same edges, and @nx/enforce-module-boundaries passes on every file', async () => {
    execFileSync(join(ROOT, 'node_modules/.bin/nx'), ['graph', `--file=${join(graphDir, 'graph.json')}`], { cwd: ROOT, stdio: 'pipe', env: { ...process.env, NX_DAEMON: 'false' } });
    const graph = JSON.parse(readFileSync(join(graphDir, 'graph.json'), 'utf8')).graph as { dependencies: Record<string, Array<{ target: string }>> };
    for (const p of all) {
      const nxEdges = (graph.dependencies[p.name] ?? []).map((d) => d.target).filter((t) => !t.startsWith('npm:')).sort();
      expect(nxEdges, `nx edges of ${p.name}`).toEqual([...new Set(edges.get(p.name))].sort());
    }
    const eslint = new ESLint({ cwd: ROOT });
    // The rule is live: an import of the CLI from a lib is reported (a rule that skipped would pass anything).
    const cli = ['@rstar', 'cli'].join('/'); // spelled apart so the import scan above does not count it
    const [probe] = await eslint.lintText(`import { ProgressPrinter } from '${cli}';\nexport const p = ProgressPrinter;\n`, { filePath: join(ROOT, 'libs/grader/src/boundary-probe.ts') });
    expect(probe.messages.map((m) => m.ruleId)).toContain('@nx/enforce-module-boundaries');
    // A lib importing a lib of a scope it may not use (the grader using the rollout drivers) is reported too.
    const rollouts = ['@rstar', 'rollouts'].join('/');
    const [upward] = await eslint.lintText(`import { PolicyServingHandler } from '${rollouts}';\nexport const r = PolicyServingHandler;\n`, { filePath: join(ROOT, 'libs/grader/src/scope-probe.ts') });
    expect(upward.messages.map((m) => m.message).join('\n')).toMatch(/scope:grading/);
    const results = await eslint.lintFiles(['apps', 'libs', 'services', 'test']);
    const violations = results.flatMap((r) => r.messages.filter((m) => m.ruleId === '@nx/enforce-module-boundaries').map((m) => `${relative(ROOT, r.filePath)}:${m.line} ${m.message}`));
    expect(violations).toEqual([]);
  }, 600_000);
});
