import { extractAnswer, grade, gradeAsync, gradeTrajectoryAnswer, readHandVerdicts, SympySandboxBackend } from '@rstar/grader';
import { SandboxPool } from '@rstar/sandbox';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

interface Case {
  prediction: string;
  gold: string;
  kind: string;
}

const CASES_FILE = resolve(__dirname, '../../../libs/grader/fixtures/grading-cases.jsonl');
/** Real answers with their problems (the regression corpus): the problem-aware path. */
const CORPUS_FILE = resolve(__dirname, '../../../libs/grader/fixtures/trajectory-verdicts.jsonl');
/** Kinds whose grading goes through expression evaluation (radicals, pi/e, algebra, relations, matrices). */
const SYMBOLIC_KINDS = new Set(['radical', 'constant_pi_e', 'symbolic_expression', 'equation', 'inequality_relation', 'matrix_vector', 'interval', 'robustness']);

/** Grades per second of `fn` over `pairs`, cycling for at least `minMs`. */
function rate(pairs: [string, string][], minMs: number, fn: (p: string, g: string) => unknown): number {
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs) {
    for (const [p, g] of pairs) fn(p, g);
    n += pairs.length;
  }
  return n / ((performance.now() - t0) / 1000);
}

function percentile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
}

/**
 * `pnpm bench grader [--ms N] [--sympy]`: grades per second on one core for (a) integer answers,
 * (b) the whole case file and (c) the real answers of the regression corpus graded with their problems
 * (problem-aware mode); p99 and max latency of the symbolic path (last JSON line: `symbolic_p99_ms`);
 * baseline in the same run: extraction plus string equality (what a substring/exact-match reward costs).
 * `--sympy` also times the sandbox path.
 */
export async function run(args: string[]): Promise<object> {
  const msArg = args.indexOf('--ms');
  const minMs = msArg >= 0 ? Number(args[msArg + 1]) : 2000;
  const cases: Case[] = readFileSync(CASES_FILE, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));

  // (a) integer answers: 1,000 pairs, half equal, some with thousands separators and leading zeros.
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const ints: [string, string][] = Array.from({ length: 1000 }, (_, i) => {
    const g = Math.floor(rnd() * 100000);
    const p = i % 2 === 0 ? g : g + 1 + Math.floor(rnd() * 10);
    return [`The final answer is $\\boxed{${i % 7 === 0 ? p.toLocaleString('en-US') : p}}$.`, String(g)];
  });
  const all: [string, string][] = cases.map((c) => [c.prediction, c.gold]);
  grade(all[0][0], all[0][1]); // load the LaTeX parser before timing

  process.stderr.write('grader bench: baseline (extract + string equality)...\n');
  const baseline = rate(ints, minMs, (p, g) => extractAnswer(p) === g);
  process.stderr.write('grader bench: integer answers...\n');
  const integer = rate(ints, minMs, (p, g) => grade(p, g));
  process.stderr.write('grader bench: whole case file...\n');
  const allRate = rate(all, minMs, (p, g) => grade(p, g));

  process.stderr.write('grader bench: real answers with their problems...\n');
  const corpus = readHandVerdicts(CORPUS_FILE);
  let nCorpus = 0;
  const tc = performance.now();
  while (performance.now() - tc < minMs) {
    for (const r of corpus) gradeTrajectoryAnswer(r);
    nCorpus += corpus.length;
  }
  const corpusRate = nCorpus / ((performance.now() - tc) / 1000);

  const symbolic = cases.filter((c) => SYMBOLIC_KINDS.has(c.kind));
  const lat: number[] = [];
  let maxMs = 0;
  for (let r = 0; r < 20; r++)
    for (const c of symbolic) {
      const v = grade(c.prediction, c.gold);
      lat.push(v.ms);
      maxMs = Math.max(maxMs, v.ms);
    }

  const out: Record<string, number | string> = {
    bench: 'grader',
    integer_grades_per_s: Math.round(integer),
    all_grades_per_s: Math.round(allRate),
    problem_aware_grades_per_s: Math.round(corpusRate),
    symbolic_p99_ms: Number(percentile(lat, 0.99).toFixed(3)),
    symbolic_max_ms: Number(maxMs.toFixed(3)),
    baseline_string_match_per_s: Math.round(baseline),
    cases: cases.length,
  };

  if (args.includes('--sympy')) {
    process.stderr.write('grader bench: sympy in the sandbox...\n');
    const pool = new SandboxPool({ workers: 1 });
    await pool.start();
    try {
      const backend = new SympySandboxBackend(pool);
      const sym: number[] = [];
      for (const [p, g] of [['\\sin(\\pi)', '0'], ['e^{-1000}', '0'], ['\\cos(\\pi/3)^2', '\\frac14']] as const)
        for (let r = 0; r < 5; r++) sym.push((await gradeAsync(`\\boxed{${p}}`, g, { symbolic: backend, timeoutMs: 4000 })).ms);
      out.sympy_p99_ms = Number(percentile(sym, 0.99).toFixed(1));
    } finally {
      await pool.close();
    }
  }
  return out;
}
