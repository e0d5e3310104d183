import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig, type RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus } from '@rstar/messaging';
import { groupTable, indexRun, readHistory } from '@rstar/replay';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { freeLocalPort, type MlflowServer, startMlflowServer, until } from '@rstar/testing';
import { runTraining, type TrainingResult } from '@rstar/training';
import { CHROMIUM, launchChromium, screenshot, type HeadlessChromium } from '../support/chromium';
import { REPO_ROOT, ServiceProcess } from '../support/service-process';
import { runRefillScenario } from '../support/refill-scenario';
import { ensureSftCheckpoint, SFT_CHECKPOINT_TIMEOUT_MS } from '../support/sft-checkpoint';

/**
 * The dashboard in a real headless Chromium (Debian's chromium driven by playwright-core) against a real
 * control-plane process on real Postgres and NATS: every page of the golden history, of a tampered copy
 * (replay differences) and of a fresh tiny run followed live as its steps arrive, each checked against the
 * archived events; screenshots go to .rstar/screenshots/ (CI artefacts). The tiny run has the MLflow sink
 * on (a real `mlflow server`): MLflow must hold its step metrics afterwards.
 */
const NATS_URL = process.env.RSTAR_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const GOLDEN = join(REPO_ROOT, 'test/fixtures/golden-run/events.jsonl');
const RUN = 'golden-run-1';
const TAMPERED = 'golden-tampered';
const tag = `dash${process.pid}${Date.now().toString(36)}`;

/** The golden run under another id, one reward and one RoC pick changed: `verify` must report both. */
function tamperedRun(): RstarEvent[] {
  const events = JSON.parse(JSON.stringify(readHistory(GOLDEN)).replaceAll(RUN, TAMPERED)) as RstarEvent[];
  const reward = events.find((e): e is RstarEvent<'RewardAssigned'> => e.type === 'RewardAssigned' && e.data.reward === 0)!;
  Object.assign(reward.data, { reward: 1, correct: true });
  const group = events.find((e): e is RstarEvent<'GroupResampled'> => e.type === 'GroupResampled' && e.data.groupDropped === null && e.data.dropped.length > 0)!;
  const [k, d] = [group.data.kept[0], group.data.dropped[0]];
  group.data.kept = [d, ...group.data.kept.slice(1)];
  group.data.dropped = [k, ...group.data.dropped.slice(1)];
  return events;
}

/** What `rstar replay verify RUN --no-exec` prints (the real CLI, in a child process). */
function cliVerify(runId: string, source: string[]): string[] {
  try {
    return execFileSync(process.execPath, ['--import', 'tsx', 'libs/cli/src/main.ts', 'replay', 'verify', runId, '--no-exec', ...source], { cwd: REPO_ROOT, encoding: 'utf8', env: { ...process.env, RSTAR_LOG_LEVEL: 'warn' } }).trimEnd().split('\n');
  } catch (e) {
    const out = (e as { stdout?: string }).stdout; // exit code 1: differences found
    if (out) return out.trimEnd().split('\n');
    throw e;
  }
}

const texts = (page: Page, sel: string) => page.locator(sel).allTextContents();
/** A number as the pages print it (integers bare, else `digits` decimals). */
const shown = (v: number, digits = 3) => (Number.isInteger(v) ? String(v) : v.toFixed(digits));

describe('dashboard in headless Chromium', () => {
  let cp: ServiceProcess;
  let base: string;
  let chrome: HeadlessChromium;
  let page: Page;
  let store: EventStore;
  let uiDir: string;
  const golden = readHistory(GOLDEN);
  const tampered = tamperedRun();
  const tmp = mkdtempSync(join(tmpdir(), 'rstar-dash-'));

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: run \`bash infra/local/install.sh\` (Debian package chromium) or set RSTAR_CHROMIUM`);
    uiDir = join(tmp, 'ui');
    execFileSync(join(REPO_ROOT, 'node_modules/.bin/vite'), ['build', '--config', 'apps/dashboard/vite.config.mts', '--outDir', uiDir, '--emptyOutDir', '--logLevel', 'warn'], { cwd: REPO_ROOT, stdio: 'pipe' });
    store = await EventStore.connect({ connectionString: PG_URL, schema: tag });
    await store.appendBatch(golden);
    await store.appendBatch(tampered);
    const port = await freeLocalPort();
    cp = new ServiceProcess({
      name: 'control-plane', entry: 'services/control-plane/src/main.ts', port,
      env: { RSTAR_NATS_URL: NATS_URL, RSTAR_STREAM: tag.toUpperCase(), RSTAR_SUBJECT_PREFIX: tag, RSTAR_DATABASE_URL: PG_URL, RSTAR_DB_SCHEMA: tag, RSTAR_UI_DIR: uiDir, RSTAR_LIVE_POLL_MS: '250', RSTAR_LOG_LEVEL: 'warn' },
    });
    await cp.start();
    base = `http://127.0.0.1:${port}/ui/`;
    chrome = await launchChromium();
    page = await chrome.page();
  }, 300_000);

  afterAll(async () => {
    await chrome?.close();
    await cp?.stop();
    await store?.close();
    const bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag }).catch(() => null);
    if (bus) {
      await bus.jsm.streams.delete(bus.stream).catch(() => undefined);
      await bus.close();
    }
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE; DROP SCHEMA IF EXISTS "${tag}_read" CASCADE`);
    await c.end();
    rmSync(tmp, { recursive: true, force: true });
  }, 120_000);

  const open = async (hash: string, ready: string) => {
    await page.goto(base + hash);
    await page.locator(ready).first().waitFor({ timeout: 60_000 });
  };

  it('lists the runs and opens one with the keyboard alone', async () => {
    await open('#/', '[data-testid=runs-table] [role=row][aria-rowindex]');
    const rows = await texts(page, '[data-testid=runs-table] [role=row][aria-rowindex]');
    expect(rows.some((r) => r.includes(RUN) && r.includes('completed') && r.includes('synthetic'))).toBe(true);
    await screenshot(page, 'runs');
    // Skip link, brand link, then the table: Enter opens the active (first) row.
    for (let i = 0; i < 3; i++) await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.className')).toBe('vbody');
    await page.keyboard.press('Enter');
    await until(() => page.evaluate('window.location.hash.startsWith("#/runs/")'), 'Enter to open a run');
  });

  it("the golden run's page: its curves, one row per step with the recorded metrics, stage bands", async () => {
    await open(`#/runs/${RUN}`, '[data-testid=chart-reward] .chart[data-rendered=true]');
    const steps = golden.filter((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted');
    const rows = await texts(page, '[data-testid=step-table] [role=row][aria-rowindex]');
    expect(rows).toHaveLength(steps.length);
    steps.forEach((s, i) => expect(rows[i]).toContain(shown(s.data.metrics.rewardMean!)));
    expect(await page.getByTestId('run-step').textContent()).toBe('1 of 0–1');
    await screenshot(page, 'golden-run');
    await page.goto(`${base}#/runs/${RUN}/config`);
    await expect.poll(() => page.getByTestId('config').textContent()).toContain('promptsPerStep: 3');
    await screenshot(page, 'golden-config');
  });

  it("a step page shows each group's rewards, RoC penalties, kept/dropped and advantages as recorded", async () => {
    const ix = indexRun(golden, RUN);
    for (const step of [0, 1]) {
      await open(`#/runs/${RUN}/steps/${step}`, '[data-testid=group]');
      const groups = groupTable(ix, { step });
      const cards = page.getByTestId('group');
      expect(await cards.count()).toBe(groups.length);
      for (const [i, g] of groups.entries()) {
        const card = cards.nth(i);
        expect(await card.locator('header').textContent()).toContain(g.groupDropped ? `dropped: ${g.groupDropped}` : `kept ${g.kept}`);
        const cells = await card.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
        expect(cells.map((c) => [c[1], c[4], c[5]])).toEqual(g.members.map((m) => [String(m.reward), m.status, m.advantage === null ? '-' : shown(m.advantage, 4)]));
      }
      if (step === 0) await screenshot(page, 'golden-step');
    }
    // Filter by outcome: the "wrong" filter keeps exactly the rollouts graded 0.
    await page.getByRole('button', { name: /^wrong/ }).click();
    const wrong = [...ix.rollouts.values()].filter((r) => r.step === 1 && r.reward && !r.reward.correct).length;
    await expect.poll(() => page.locator('[data-testid=step-rollout-table] [role=row][aria-rowindex]').count()).toBe(wrong);
  });

  it('a rollout page shows exactly the code and tool output archived for it, the reward and its rule', async () => {
    const ix = indexRun(golden, RUN);
    const withCalls = [...ix.rollouts.values()].filter((r) => r.calls.length > 0);
    expect(withCalls.length).toBeGreaterThan(3);
    for (const r of withCalls) {
      await open(`#/runs/${RUN}/rollouts/${encodeURIComponent(r.rolloutId)}`, '[data-testid=tool-code]');
      expect(await texts(page, '[data-testid=tool-code]')).toEqual(r.calls.map((c) => c.requested!.code));
      expect(await texts(page, '[data-testid=tool-stdout]')).toEqual(r.calls.map((c) => c.completed!.stdout));
      expect(await texts(page, '[data-testid=tool-stderr]')).toEqual(r.calls.map((c) => c.completed!.stderr).filter(Boolean));
      expect(await texts(page, '[data-testid=tool-status]')).toEqual(r.calls.map((c) => c.completed!.status));
      expect(await texts(page, '[data-testid=turn-text]')).toEqual(r.turns.map((t) => t.text));
      expect(await page.getByTestId('rule').textContent()).toBe(r.reward!.rule);
      expect(await page.getByTestId('engine').textContent()).toBe(r.completed!.engineId);
      expect(await page.getByTestId('policy-version').textContent()).toBe(`v${r.completed!.policyVersion}`);
    }
    const errored = withCalls.find((r) => r.calls.some((c) => c.completed!.stderr))!;
    await open(`#/runs/${RUN}/rollouts/${encodeURIComponent(errored.rolloutId)}`, '[data-testid=tool-code]');
    await page.getByRole('button', { name: 'show tokens' }).click();
    const tokens = await page.getByTestId('token-view').textContent();
    expect(tokens).toBe(errored.completed!.responseText);
    await screenshot(page, 'golden-rollout');
  });

  it('a replay page shows exactly the differences `rstar replay verify` prints, each next to the recorded value', async () => {
    // The CLI reads the same archive the dashboard does (its hash-chain line included).
    const cli = cliVerify(TAMPERED, ['--database', PG_URL, '--schema', tag]);
    expect(cli[0]).toMatch(/^hash chain: ok \(/);
    expect(cli.filter((l) => l.startsWith('DIFF')).length).toBeGreaterThanOrEqual(2);
    await open(`#/runs/${TAMPERED}/replay`, '[data-testid=verify-line]');
    expect(await texts(page, '[data-testid=verify-line]')).toEqual(cli);
    expect(await page.getByTestId('verdict').textContent()).toBe('FAILED');
    const first = page.getByTestId('difference').first();
    expect(await first.getByTestId('recorded').locator('.hl-old').count()).toBeGreaterThan(0);
    await screenshot(page, 'replay-differences');
    // The untouched golden run verifies clean, line for line as the CLI says.
    await open(`#/runs/${RUN}/replay`, '[data-testid=verify-line]');
    expect(await texts(page, '[data-testid=verify-line]')).toEqual(cliVerify(RUN, ['--database', PG_URL, '--schema', tag]));
    await screenshot(page, 'replay-ok');
  });

  it('the sandbox page counts every archived tool call by status', async () => {
    await open(`#/runs/${RUN}/sandbox`, '[data-testid=sandbox-calls]');
    const calls = golden.filter((e) => e.type === 'ToolCallCompleted');
    expect(await page.getByTestId('sandbox-calls').textContent()).toBe(String(calls.length));
    await page.locator('[data-testid=sandbox-timeline] .chart[data-rendered=true]').waitFor();
    await screenshot(page, 'sandbox');
  });

  it("a step page shows a timed-out group's reason and marks dynamic sampling's extra groups", async () => {
    // The refill scenario (real step driver and resampler, scripted rollouts) on the control plane's own stream: it archives it.
    const runId = `refill-${tag}`;
    const bus = await JetStreamBus.connect({ servers: NATS_URL, stream: tag.toUpperCase(), subjectPrefix: tag });
    try {
      await runRefillScenario(bus, runId);
    } finally {
      await bus.close();
    }
    await until(async () => (await store.readRunSnapshot(runId)).some((e) => e.type === 'RunCompleted'), 'the refill run archived', { timeoutMs: 120_000, everyMs: 500 });
    const ix = indexRun(await store.readRunSnapshot(runId), runId);
    const timedOut = groupTable(ix, { dropped: 'timeout' });
    expect(timedOut).toHaveLength(1);
    await open(`#/runs/${runId}/steps/2`, '[data-testid=group-timeout]');
    expect(await texts(page, '[data-testid=group-timeout]')).toEqual([`timed out: ${timedOut[0].timeout!.reason}`]);
    await screenshot(page, 'step-timeout');
    // Step 0: prompt 3 is the extra group that replaced the all-equal prompt 0 (the page re-renders in place: wait for its 4 groups).
    await open(`#/runs/${runId}/steps/0`, '[data-testid=group]');
    await expect.poll(() => page.getByTestId('group').count()).toBe(4);
    const headers = await texts(page, '[data-testid=group] header');
    expect(headers.map((h) => h.includes('extra group'))).toEqual([false, false, false, true]);
    expect(await page.getByTestId('group-timeout').count()).toBe(0);
  });

  describe('a fresh tiny run, followed live, with the MLflow sink on', () => {
    let mlflow: MlflowServer;
    let runtime: Runtime;
    let result: TrainingResult;
    let sft: string;
    const runId = `dash-tiny-${tag}`;

    beforeAll(async () => {
      // A policy that already writes tool calls (the tiny preset's SFT, trained once and cached for the test suite).
      sft = await ensureSftCheckpoint();
      mlflow = await startMlflowServer();
      runtime = await connectRuntime({ natsUrl: '', databaseUrl: PG_URL, schema: tag });
    }, SFT_CHECKPOINT_TIMEOUT_MS + 300_000);
    afterAll(async () => {
      await runtime?.close();
      await mlflow?.stop();
    });

    it('new steps appear on the run page without a reload; then every page matches the archive and MLflow holds the step metrics', async () => {
      const config = parseRunConfig({
        name: 'dash-tiny', seed: 1,
        policy: { kind: 'builtin', model: { layers: 2, dModel: 64, heads: 4, context: 160 }, init: 'checkpoint', checkpoint: sft },
        data: { source: 'tasks', heldOutSize: 4, trainSize: 128 },
        stages: [
          { name: 'rl-1', steps: 2, promptsPerStep: 2, groupSize: 2, oversample: 2, maxResponseTokens: 112, maxTurns: 3, temperature: 1, lr: 0.0005 },
          { name: 'rl-2', steps: 1, promptsPerStep: 2, groupSize: 2, oversample: 2, maxResponseTokens: 112, maxTurns: 3, temperature: 1, lr: 0.0005 },
        ],
        roc: { enabled: true, mode: 'weighted' },
        eval: { samples: 1, temperature: 0, maxTurns: 4, maxResponseTokens: 140 },
        checkpoints: { keepLast: 1 },
        trackers: { mlflow: { trackingUri: mlflow.url, experiment: 'rstar-dashboard-e2e' }, sampleRollouts: 2 },
      });
      const outDir = join(tmp, 'run');
      const messages: string[] = [];
      const training = runTraining(config, { runId, runtime, outDir, onProgress: (p) => p.phase === 'message' && messages.push(p.text) });
      training.catch(() => undefined);
      // The run shows up in the runs list by itself (server-sent events), while it runs.
      await open('#/', '[data-testid=runs-table]');
      await page.locator(`[data-testid=runs-table] a:text("${runId}")`).waitFor({ timeout: 600_000 });
      await page.evaluate('window.__noReload = true');
      await page.locator(`[data-testid=runs-table] a:text("${runId}")`).click();
      await page.getByTestId('run-summary').waitFor();
      const rowsNow = () => page.locator('[data-testid=step-table] [role=row][aria-rowindex]').count();
      const completedNow = () => page.locator('[data-testid=step-table] .chip-completed').count();
      const firstSeen = await completedNow();
      expect(firstSeen, 'the page must open before the run ends to show steps arriving').toBeLessThan(3);
      const seen = new Set<number>([firstSeen]);
      await until(async () => {
        seen.add(await completedNow());
        return (await completedNow()) === 3 && (await page.getByTestId('run-heldout').textContent())?.includes('→');
      }, 'the three steps and both held-out evaluations to arrive live', { timeoutMs: 600_000, everyMs: 200 });
      expect(await page.evaluate('window.__noReload')).toBe(true);
      expect(seen.size, 'steps arrived one after another').toBeGreaterThan(1);
      expect(await rowsNow()).toBe(3);
      await page.locator('[data-testid=chart-reward] .chart[data-rendered=true]').waitFor();
      await screenshot(page, 'tiny-run-live');
      result = await training;

      // The run's events, as archived.
      const events: RstarEvent[] = await store.readRunSnapshot(runId);
      const steps = events.filter((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted').sort((a, b) => a.data.step - b.data.step);
      expect(steps.map((s) => s.data.step)).toEqual([0, 1, 2]);
      const rows = await texts(page, '[data-testid=step-table] [role=row][aria-rowindex]');
      steps.forEach((s, i) => expect(rows[i]).toContain(shown(s.data.metrics.rewardMean!)));
      expect(await page.getByTestId('run-status').textContent()).toContain('completed');

      // checkpoints.keepLast 1: only the newest step checkpoint is left.
      const optimized = events.filter((e): e is RstarEvent<'StepOptimized'> => e.type === 'StepOptimized').map((e) => e.data.step);
      expect(optimized.length, 'at least one step trained').toBeGreaterThan(0);
      expect(readdirSync(join(outDir, 'checkpoints'))).toEqual([`step-${Math.max(...optimized)}`]);

      // Step and rollout pages of the fresh run, against its events.
      const ix = indexRun(events, runId);
      await open(`#/runs/${encodeURIComponent(runId)}/steps/0`, '[data-testid=group]');
      expect(await page.getByTestId('group').count()).toBe(2);
      const r = [...ix.rollouts.values()].find((x) => x.calls.length > 0 && x.calls.every((c) => c.completed));
      expect(r, 'the tiny policy made at least one tool call').toBeDefined();
      await open(`#/runs/${encodeURIComponent(runId)}/rollouts/${encodeURIComponent(r!.rolloutId)}`, '[data-testid=tool-code]');
      expect(await texts(page, '[data-testid=tool-code]')).toEqual(r!.calls.map((c) => c.requested!.code));
      expect(await texts(page, '[data-testid=tool-stdout]')).toEqual(r!.calls.map((c) => c.completed!.stdout));
      await screenshot(page, 'tiny-rollout');
      await open(`#/runs/${encodeURIComponent(runId)}/replay`, '[data-testid=verify-line]');
      expect(await texts(page, '[data-testid=verify-line]')).toEqual(cliVerify(runId, ['--database', PG_URL, '--schema', tag]));
      await open(`#/runs/${encodeURIComponent(runId)}/rollouts`, '[data-testid=rollout-list] [role=row][aria-rowindex]');
      await expect.poll(() => page.locator('[data-testid=run-rollouts] h2').textContent()).toBe(`Rollouts (${ix.rollouts.size})`);
      await screenshot(page, 'tiny-rollouts');

      // MLflow holds every step's metrics at its step, and the held-out pass@1 before and after.
      const api = async (path: string, body?: unknown) =>
        (await fetch(`${mlflow.url}/api/2.0/mlflow/${path}`, body ? { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : undefined)).json() as Promise<any>;
      const exp = (await api('experiments/get-by-name?experiment_name=rstar-dashboard-e2e')).experiment;
      const [run] = (await api('runs/search', { experiment_ids: [exp.experiment_id], filter: `tags.\`rstar.runId\` = '${runId}'` })).runs;
      // A sink that failed is dropped with a message: none may have failed.
      expect(messages.filter((m) => m.startsWith('tracker:'))).toEqual([]);
      expect(run.info.status).toBe('FINISHED');
      for (const key of ['rewardMean', 'toolErrorRatioAll', 'loss']) {
        const hist = (await api(`metrics/get-history?run_id=${run.info.run_id}&metric_key=${key}`)).metrics.map((m: any) => [m.step, m.value]);
        expect(hist, key).toEqual(steps.filter((s) => s.data.metrics[key] !== null).map((s) => [s.data.step, s.data.metrics[key]]));
      }
      const held = (await api(`metrics/get-history?run_id=${run.info.run_id}&metric_key=heldOut.held-out.passAt1`)).metrics;
      expect(held.map((m: any) => [m.step, m.value])).toEqual(result.evaluations.map((e) => [e.afterStep, e.passAt1]));
      writeFileSync(join(tmp, 'done'), '');
    }, 900_000);
  });
});
