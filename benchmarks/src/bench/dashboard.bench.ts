import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import type { RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import type { RegradeFn } from '@rstar/replay';
import { REPO_ROOT } from '@rstar/sandbox';
import { freeLocalPort, generateSyntheticRun, stopGroup, syntheticRunSteps } from '@rstar/testing';
import { intArg } from './bench.args';

const CHROMIUM = process.env.RSTAR_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Rewards by comparing the last `\boxed{}` with the gold answer exactly: the grader is not what this
 * benchmark measures, and the real one would take ~20 minutes over 10^5 rollouts here.
 */
const exactGrade: RegradeFn = ({ responseText, gold }) => {
  let last: string | null = null;
  for (const m of responseText.matchAll(/\\boxed\{([^}]*)\}/g)) last = m[1];
  const ok = last === gold;
  return { reward: ok ? 1 : 0, correct: ok, extracted: last, rule: ok ? 'exact' : last === null ? 'no_answer' : 'mismatch' };
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * `pnpm bench dashboard [--steps 500] [--prompts 25] [--samples 8] [--loads 5] [--fresh]`: a synthetic run of
 * steps x prompts x samples rollouts (10^5 by default: @rstar/replay's load generator, stored step by step
 * into its own Postgres schema `bench_dashboard_<size>`, kept for the next run unless `--fresh`), a
 * control-plane process serving the freshly built dashboard over it, and Debian's chromium (playwright-core)
 * opening the run page `--loads` times, each in a new browser context (cold cache): `first_chart_ms` is the
 * median time from navigation start to the first chart drawn (ECharts' `finished`, read from the page).
 * Anchor in the same run: the same page on the 2-step golden history (24 rollouts). Also the step page (200
 * rollouts, virtualised) and the rollout page to content, and the API's time for the run view, a step, a
 * deep page of the run-wide rollouts list and one rollout. Goal: first chart < 2000 ms. Needs Postgres
 * (RSTAR_DATABASE_URL, default postgres://rstar:rstar@127.0.0.1:5432/rstar).
 */
export async function run(args: string[]): Promise<object> {
  const opt = (name: string, dflt: number): number => intArg(args, `--${name}`, dflt);
  const steps = opt('steps', 500);
  const prompts = opt('prompts', 25);
  const samples = opt('samples', 8);
  const loads = opt('loads', 5);
  const rollouts = steps * prompts * samples;
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: bash infra/local/install.sh installs Debian's chromium (or set RSTAR_CHROMIUM)`);
  const pg = process.env.RSTAR_DATABASE_URL || 'postgres://rstar:rstar@127.0.0.1:5432/rstar';
  const schema = `bench_dashboard_${steps}_${prompts}_${samples}`;
  const runId = `bench-dashboard-${rollouts}`;
  const say = (s: string) => process.stderr.write(`dashboard bench: ${s}\n`);

  // --- the run, stored as it is generated (kept between runs of the bench) ---
  const store = await EventStore.connect({ connectionString: pg, schema });
  let generateS: number | null = null;
  try {
    if (args.includes('--fresh')) {
      const c = await store.connectClient();
      await c.query(`DELETE FROM "${schema}".events`).finally(() => c.release());
    }
    const done = (await store.countByType(runId)).RunCompleted === 1;
    if (!done) {
      say(`generating ${steps} steps x ${prompts} prompts x ${samples} samples = ${rollouts} rollouts into schema ${schema} (once; --fresh redoes it)...`);
      const t = performance.now();
      let n = 0;
      for await (const chunk of syntheticRunSteps({ runId, seed: 7, steps, promptsPerStep: prompts, samples, keep: Math.max(1, samples / 2), responseChars: 0, grade: exactGrade })) {
        await store.appendBatch(chunk);
        n += chunk.length;
        if (n % 100_000 < chunk.length) say(`  ${n} events stored (${((performance.now() - t) / 1000).toFixed(0)} s)`);
      }
      generateS = (performance.now() - t) / 1000;
      say(`  ${n} events in ${generateS.toFixed(0)} s`);
    } else say(`reusing the run in schema ${schema} (--fresh to regenerate)`);
    const golden: RstarEvent[] = await generateSyntheticRun({ runId: 'bench-dashboard-anchor', seed: 20250101, steps: 2, promptsPerStep: 3, samples: 4, keep: 2, responseChars: 0, grade: exactGrade });
    await store.appendBatch(golden);
  } finally {
    await store.close();
  }
  const events = await (async () => {
    const s = await EventStore.connect({ connectionString: pg, schema });
    try {
      return await s.count(runId);
    } finally {
      await s.close();
    }
  })();

  // --- the dashboard, built fresh, served by control-plane ---
  const tmp = mkdtempSync(join(tmpdir(), 'rstar-bench-dashboard-'));
  const uiDir = join(tmp, 'ui');
  execFileSync(join(REPO_ROOT, 'node_modules/.bin/vite'), ['build', '--config', 'apps/dashboard/vite.config.mts', '--outDir', uiDir, '--emptyOutDir', '--logLevel', 'warn'], { cwd: REPO_ROOT, stdio: 'pipe' });
  const port = await freeLocalPort();
  const cp: ChildProcess = spawn(process.execPath, ['-r', '@swc-node/register', 'services/control-plane/src/main.ts'], {
    cwd: REPO_ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', RSTAR_DATABASE_URL: pg, RSTAR_DB_SCHEMA: schema, RSTAR_UI_DIR: uiDir, RSTAR_NATS_URL: process.env.RSTAR_NATS_URL || 'nats://127.0.0.1:4222', RSTAR_STREAM: 'BENCHDASH', RSTAR_SUBJECT_PREFIX: 'benchdash', RSTAR_LOG_LEVEL: 'error' },
  });
  let out = '';
  cp.stdout!.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-4000)));
  cp.stderr!.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-4000)));
  const base = `http://127.0.0.1:${port}`;
  let browser: Browser | null = null;
  try {
    for (let i = 0; ; i++) {
      if (cp.exitCode !== null) throw new Error(`control-plane exited: ${out}`);
      if (await fetch(`${base}/v1/views/runs?limit=1`).then((r) => r.ok, () => false)) break;
      if (i > 600) throw new Error(`control-plane did not answer in 120 s: ${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const api = async (path: string) => {
      const t = performance.now();
      const r = await fetch(`${base}/v1/views/${path}`);
      if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
      await r.json();
      return Math.round(performance.now() - t);
    };
    const enc = encodeURIComponent;
    const mid = Math.floor(steps / 2);
    const apiMs = {
      run: median([await api(`runs/${enc(runId)}`), await api(`runs/${enc(runId)}`), await api(`runs/${enc(runId)}`)]),
      step: median([await api(`runs/${enc(runId)}/steps/${mid}`), await api(`runs/${enc(runId)}/steps/${mid + 1}`), await api(`runs/${enc(runId)}/steps/${mid + 2}`)]),
      rollouts_deep_page: median([await api(`runs/${enc(runId)}/rollouts?offset=${rollouts - 100}&limit=100`), await api(`runs/${enc(runId)}/rollouts?offset=${rollouts - 200}&limit=100`), await api(`runs/${enc(runId)}/rollouts?offset=${Math.floor(rollouts / 2)}&limit=100`)]),
      rollout: median([await api(`runs/${enc(runId)}/rollouts/${enc(`rollout:${runId}:${mid}:3:1`)}`), await api(`runs/${enc(runId)}/rollouts/${enc(`rollout:${runId}:${mid}:4:2`)}`), await api(`runs/${enc(runId)}/rollouts/${enc(`rollout:${runId}:${mid}:5:3`)}`)]),
    };
    say(`API: ${JSON.stringify(apiMs)}`);

    // --- Chromium: time to first chart, cold, in a new context each time ---
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    const firstChart = async (id: string): Promise<number> => {
      const ctx = await browser!.newContext({ viewport: { width: 1440, height: 900 } });
      try {
        const page = await ctx.newPage();
        await page.goto(`${base}/ui/#/runs/${enc(id)}`);
        // The page records performance.now() when its first chart is drawn (apps/dashboard chart.tsx).
        await page.waitForFunction('typeof window.__rstarFirstChartMs === "number"', undefined, { timeout: 120_000 });
        const rows = await page.locator('[data-testid=step-table] [role=row][aria-rowindex]').count();
        if (rows === 0) throw new Error('the step table is empty');
        return Math.round((await page.evaluate('window.__rstarFirstChartMs')) as number);
      } finally {
        await ctx.close();
      }
    };
    const timeTo = async (hash: string, selector: string): Promise<number> => {
      const ctx = await browser!.newContext({ viewport: { width: 1440, height: 900 } });
      try {
        const page = await ctx.newPage();
        await page.goto(`${base}/ui/${hash}`);
        await page.locator(selector).first().waitFor({ timeout: 120_000 });
        return Math.round((await page.evaluate('performance.now()')) as number);
      } finally {
        await ctx.close();
      }
    };
    await firstChart(runId); // warm-up: the server's first queries, the browser's first start
    const big: number[] = [];
    const anchor: number[] = [];
    for (let i = 0; i < loads; i++) {
      big.push(await firstChart(runId));
      anchor.push(await firstChart('bench-dashboard-anchor'));
    }
    const stepPage = median([await timeTo(`#/runs/${enc(runId)}/steps/${mid}`, '[data-testid=step-rollout-table] [role=row][aria-rowindex]'), await timeTo(`#/runs/${enc(runId)}/steps/${mid + 3}`, '[data-testid=step-rollout-table] [role=row][aria-rowindex]'), await timeTo(`#/runs/${enc(runId)}/steps/${mid + 4}`, '[data-testid=step-rollout-table] [role=row][aria-rowindex]')]);
    const rolloutPage = median([
      await timeTo(`#/runs/${enc(runId)}/rollouts/${enc(`rollout:${runId}:${mid}:3:1`)}`, '[data-testid=turn]'),
      await timeTo(`#/runs/${enc(runId)}/rollouts/${enc(`rollout:${runId}:${mid}:6:0`)}`, '[data-testid=turn]'),
      await timeTo(`#/runs/${enc(runId)}/rollouts/${enc(`rollout:${runId}:${mid}:7:5`)}`, '[data-testid=turn]'),
    ]);
    const listPage = median([await timeTo(`#/runs/${enc(runId)}/rollouts`, '[data-testid=rollout-list] [role=row][aria-rowindex] a'), await timeTo(`#/runs/${enc(runId)}/rollouts`, '[data-testid=rollout-list] [role=row][aria-rowindex] a')]);
    say(`first chart: ${big.join(', ')} ms (anchor, 24 rollouts: ${anchor.join(', ')} ms); step page ${stepPage} ms, rollout page ${rolloutPage} ms, rollouts list ${listPage} ms`);
    return {
      bench: 'dashboard',
      first_chart_ms: median(big),
      rollouts,
      goal_first_chart_ms: 2000,
      anchor_first_chart_ms: median(anchor),
      anchor_rollouts: 24,
      first_chart_ms_each: big,
      step_page_ms: stepPage,
      rollout_page_ms: rolloutPage,
      rollouts_list_ms: listPage,
      api_ms: apiMs,
      steps,
      events,
      generate_s: generateS === null ? null : Math.round(generateS),
      load_average_1m: Number(loadavg()[0].toFixed(1)),
    };
  } finally {
    await browser?.close();
    await stopGroup(cp, 5_000);
    rmSync(tmp, { recursive: true, force: true });
  }
}
