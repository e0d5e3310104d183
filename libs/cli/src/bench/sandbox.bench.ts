import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { SandboxPool, loadTrajectories, replayTrajectories, resolvePython, type ExecRequest, type ExecResult } from '@rstar/sandbox';

/**
 * `pnpm bench sandbox [--quick]`: warm-zygote sandbox vs the baseline rStar2 trained with (a fresh
 * `python3` per call, here with the same numpy/sympy/scipy imports) in the same run, on
 * (a) `print(1)`, (b) a sympy solve, (c) the code blocks of ../shared/trajectories (a 1-in-10
 * sample of trajectories, stateful sources in sessions), and a burst of 2,000 calls submitted at once.
 * Goals (issue 3, 2-core host): overhead p50 <= 5 ms, >= 300 calls/s on (a), >= 50x baseline on (b),
 * zero burst failures except queueing.
 */
const TRIVIAL = 'print(1)';
const SYMPY = 'import sympy as sp\nx = sp.Symbol("x")\nprint(sp.solve(x**2 - 5*x + 6, x))';
const IMPORTS = 'import numpy, sympy, scipy\n';

function pct(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
const r2 = (x: number) => Math.round(x * 100) / 100;
const log = (m: string) => process.stdout.write(m + '\n');

/** Run `n` calls with `conc` in flight; latency = submit to result. */
async function load(n: number, conc: number, call: () => Promise<{ ok: boolean }>): Promise<{ perS: number; p50: number; p99: number; failures: number }> {
  const lat: number[] = [];
  let failures = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (next < n) {
        next++;
        const t = performance.now();
        const r = await call();
        lat.push(performance.now() - t);
        if (!r.ok) failures++;
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  return { perS: n / s, p50: pct(lat, 50), p99: pct(lat, 99), failures };
}

/** The baseline: one fresh interpreter per call, importing what the zygote preloads. */
function freshPython(python: string, code: string): Promise<{ ok: boolean }> {
  return new Promise((resolve) => {
    const p = spawn(python, ['-c', IMPORTS + code], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', OPENBLAS_NUM_THREADS: '1' } });
    p.stdout.resume();
    p.stderr.resume();
    p.on('exit', (c) => resolve({ ok: c === 0 }));
  });
}

export async function run(args: string[]): Promise<object> {
  const quick = args.includes('--quick');
  const python = resolvePython();
  const pool = new SandboxPool({ onWarning: (m) => log(`WARNING: ${m}`) });
  const tStart = performance.now();
  await pool.start();
  const h = pool.health();
  log(`pool: ${h.workers.total} zygotes, isolation ${h.isolation}, cgroup ${h.cgroup}, warm in ${Math.round(performance.now() - tStart)} ms; ${cpus().length} CPUs`);
  const ex = (req: ExecRequest) => pool.execute(req);
  const ok = (r: ExecResult) => ({ ok: r.status === 'ok' });
  try {
    // Single call alone: the per-call overhead of the sandbox (fork, limits, I/O, cleanup, IPC).
    for (let i = 0; i < 20; i++) await ex({ code: 'pass' });
    const alone: number[] = [];
    for (let i = 0; i < (quick ? 100 : 300); i++) {
      const t = performance.now();
      await ex({ code: 'pass' });
      alone.push(performance.now() - t);
    }
    const overheadP50 = pct(alone, 50);
    log(`(0) single call alone: p50 ${r2(overheadP50)} ms, p99 ${r2(pct(alone, 99))} ms`);

    const a = await load(quick ? 500 : 2000, 64, async () => ok(await ex({ code: TRIVIAL })));
    const aBase = await load(quick ? 8 : 16, 64, () => freshPython(python, TRIVIAL));
    log(`(a) print(1), 64 in flight: ${r2(a.perS)} calls/s p50 ${r2(a.p50)} ms p99 ${r2(a.p99)} ms; baseline ${r2(aBase.perS)} calls/s p50 ${r2(aBase.p50)} ms`);

    const b = await load(quick ? 100 : 300, 64, async () => ok(await ex({ code: SYMPY, timeoutMs: 20_000 })));
    const bBase = await load(quick ? 8 : 16, 64, () => freshPython(python, SYMPY));
    const sympySpeedup = b.perS / bBase.perS;
    log(`(b) sympy solve: ${r2(b.perS)} calls/s p50 ${r2(b.p50)} ms p99 ${r2(b.p99)} ms; baseline ${r2(bBase.perS)} calls/s -> ${r2(sympySpeedup)}x`);

    let trajectoryPerS = NaN;
    try {
      const trajs = loadTrajectories(undefined, quick ? 40 : 10);
      // At most `sessionsPerWorker` live sessions per zygote: more trajectories in flight would evict state.
      const rep = await replayTrajectories(pool, trajs, { concurrency: h.workers.total * 8, timeoutMs: 6000 });
      trajectoryPerS = rep.blocks / (rep.wallMs / 1000);
      const stateless = trajs.filter((t) => !t.stateful).flatMap((t) => t.blocks).slice(0, quick ? 8 : 16);
      let i = 0;
      const cBase = await load(stateless.length, 64, () => freshPython(python, stateless[i++ % stateless.length]!.code));
      log(
        `(c) trajectory code blocks: ${rep.blocks} blocks, ${r2(trajectoryPerS)} calls/s, agreement ${r2(rep.agreement * 100)}%; baseline (fresh python3, stateless blocks) ${r2(cBase.perS)} calls/s`,
      );
    } catch (e) {
      log(`(c) skipped: ${(e as Error).message}`);
    }

    const burstN = 2000;
    const t0 = performance.now();
    const burst = await Promise.all(Array.from({ length: burstN }, () => ex({ code: 'print(sum(range(1000)))', timeoutMs: 10_000 })));
    const failures = burst.filter((r) => r.status !== 'ok' || r.stdout !== '499500\n').length;
    log(`burst: ${burstN} calls at once in ${Math.round(performance.now() - t0)} ms, failures ${failures}`);

    return {
      bench: 'sandbox',
      trivial_calls_per_s: r2(a.perS),
      overhead_p50_ms: r2(overheadP50),
      p99_ms: r2(a.p99),
      sympy_speedup: r2(sympySpeedup),
      trajectory_calls_per_s: r2(trajectoryPerS),
      burst_failures: failures,
    };
  } finally {
    await pool.close();
  }
}
