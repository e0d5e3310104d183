import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ids, parseRunConfig, type RstarEvent } from '@rstar/contracts';
import { connectRuntime } from '@rstar/runtime';
import { writeHistory, type RerunComparison } from '@rstar/replay';
import { readRunEvents } from '@rstar/step-driver';
import { runTraining } from '@rstar/training';
import { SFT_CHECKPOINT_TIMEOUT_MS, ensureSftCheckpoint } from '../support/sft-checkpoint';

const ROOT = resolve(__dirname, '../..');

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'libs/cli/src/main.ts'), 'replay', ...args], { cwd: ROOT, maxBuffer: 64 << 20, env: { ...process.env, RSTAR_DATABASE_URL: '', RSTAR_NATS_URL: '' } }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/**
 * `rstar replay rerun RUN --step N` with no services running (standalone): a fresh 2-step
 * standalone run (cached SFT checkpoint, PGlite archive in its run folder) is re-run step by step in the
 * CLI's own process (built-in engine on the step's policy version, sandbox, every handler) and compared
 * with the original rollout by rollout.
 */
describe('rstar replay rerun --standalone: a recorded step re-run in process and compared with the original', () => {
  const runId = ids.newRun();
  let out: string;
  let events: RstarEvent[];
  let ckpt: string;

  beforeAll(async () => {
    ckpt = await ensureSftCheckpoint();
    out = mkdtempSync(join(tmpdir(), 'rstar-rerun-e2e-'));
    const config = parseRunConfig({
      name: 'e2e-rerun', seed: 13, policy: { model: { layers: 2, dModel: 64, heads: 4, context: 160 }, init: 'checkpoint', checkpoint: ckpt },
      data: { source: 'tasks', heldOutSize: 4, trainSize: 256 },
      stages: [{ name: 'rl-1', steps: 2, promptsPerStep: 4, groupSize: 2, oversample: 2, maxResponseTokens: 112, maxTurns: 3, lr: 0.0005 }],
      trainer: { warmupSteps: 1 },
    });
    const runtime = await connectRuntime({ natsUrl: '', databaseUrl: '', dataDir: join(out, 'events') });
    try {
      await runTraining(config, { runtime, runId, outDir: out, skipEval: true, sandboxWorkers: 1 });
      events = await readRunEvents(runtime.store, runId);
    } finally {
      await runtime.close();
    }
  }, SFT_CHECKPOINT_TIMEOUT_MS + 300_000);

  afterAll(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('re-runs step 1 on its policy version from the run folder with no deterministic difference, exits 0, and records the linked run', async () => {
    const rerunId = ids.newRun();
    const r = await cli(['rerun', runId, '--data-dir', join(out, 'events'), '--step', '1', '--run-id', rerunId, '--json']);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const c = JSON.parse(r.stdout) as RerunComparison & { runId: string; checkpoint: string };
    expect(c).toMatchObject({ runId: rerunId, originalRunId: runId, rerunRunId: rerunId, step: 1, ok: true, deterministicDifferences: 0 });
    // The engine served the checkpoint of the policy version step 1 was sampled from: that PolicyUpdated's,
    // or the SFT checkpoint when step 0 made no update (every group had equal rewards).
    const started = events.find((e): e is RstarEvent<'StepStarted'> => e.type === 'StepStarted' && e.data.step === 1)!;
    const version = started.data.policyVersion;
    const update = events.find((e): e is RstarEvent<'PolicyUpdated'> => e.type === 'PolicyUpdated' && e.data.version === version);
    expect(c.checkpoint).toBe(version === 0 ? resolve(ROOT, ckpt) : update!.data.checkpointUri);
    const requested = events.filter((e) => e.type === 'RolloutRequested' && (e.data as { step: number }).step === 1);
    expect(c.rollouts).toHaveLength(requested.length);
    // Every rollout is reproduced token for token, or diverges only after a timing-dependent observation
    // (the tool response carries the call's execution time); none differs deterministically.
    expect(c.reproduced + c.timingDependent).toBe(requested.length);
    for (const row of c.rollouts) {
      expect(row.rerunRolloutId).toBe(ids.rollout(rerunId, 1, row.promptIdx, row.sampleIdx));
      expect(row.differences).toEqual([]);
      if (row.timingDependent.length === 0) expect(row).toMatchObject({ rewardSame: true, answerSame: true, responseSame: true });
      else expect(row.timingDependent.join('\n')).toMatch(/timing-dependent tool call|execution-time line/);
    }
    expect(c.rollouts.some((row) => row.calls.length > 0), 'the tiny SFT policy writes tool calls').toBe(true);

    const show = await cli(['show', rerunId, '--data-dir', join(out, 'events')]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`rerun of ${runId} step 1`);
    expect(show.stdout).toMatch(new RegExp(`rollouts ${requested.length}/${requested.length}`));
  }, 300_000);

  it('exits 1 and names the rollout and the tool call when a recorded tool output differs from what the step reproduces', async () => {
    // A history whose step-0 record holds a tool output today's sandbox does not produce (as a changed
    // sandbox or library would leave it): the first call of a rollout, whose code the rerun writes again
    // from the same prompt and seed.
    const tampered = JSON.parse(JSON.stringify(events)) as RstarEvent[];
    const step0 = new Set(events.flatMap((e) => (e.type === 'RolloutRequested' && e.data.step === 0 ? [e.data.rolloutId] : [])));
    const call = tampered.find((e): e is RstarEvent<'ToolCallCompleted'> =>
      e.type === 'ToolCallCompleted' && step0.has(e.data.rolloutId) && e.data.callId === ids.toolCall(e.data.rolloutId, 0, 0) && e.data.status === 'ok' &&
      events.some((q) => q.type === 'ToolCallRequested' && q.data.callId === e.data.callId && !/import|time|random/.test(q.data.code)))!;
    expect(call, 'a step-0 rollout whose first call ran ok').toBeDefined();
    call.data.stdout = `${call.data.stdout}tampered\n`;
    const file = join(out, 'tampered.jsonl');
    writeHistory(file, tampered);
    const r = await cli(['rerun', runId, '--history', file, '--step', '0']);
    expect(r.code, r.stderr + r.stdout).toBe(1);
    const diffs = r.stdout.split('\n').filter((l) => l.startsWith('DIFF'));
    expect(diffs[0]).toContain(`(${call.data.rolloutId}): tool call #0: output differs (real_change)`);
    // What follows in that rollout may differ too (its reward, and with it its group's drop or penalties,
    // which then name it); no other rollout differs deterministically.
    for (const d of diffs) expect(d).toContain(`(${call.data.rolloutId})`);
    for (const d of diffs.filter((l) => l.startsWith('DIFF group'))) expect(d).toContain(`following the differences of (${call.data.rolloutId})`);
    expect(r.stdout).toMatch(/FAILED: \d+ deterministic differences/);
  }, 300_000);

  it('refuses a history without a valid run config (the synthetic golden run) with a nonzero exit and the reason', async () => {
    const r = await cli(['rerun', 'golden-run-1', '--history', join(__dirname, '../fixtures/golden-run/events.jsonl'), '--step', '1']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('run golden-run-1 records no valid run config');
  }, 120_000);
});
