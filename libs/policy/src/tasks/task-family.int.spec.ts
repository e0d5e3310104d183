import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPool } from '@rstar/sandbox';
import { parseTurn } from '@rstar/agent';
import { sandboxExecutor } from '../code.executor';
import { PolicyModel } from '../policy.model';
import { runSft } from '../sft.runner';
import { Tokenizer } from '../tokenizer';
import { lastBoxed } from './heldout.evaluator';
import { buildSftTrace, taskPrompt } from './sft-trace.builder';
import { TASK_KINDS, generateTasks } from './task.generator';

describe('task family, SFT traces and runSft (real Python sandbox)', () => {
  let pool: SandboxPool;
  const tmp = mkdtempSync(join(tmpdir(), 'rstar-sft-'));
  beforeAll(async () => {
    pool = new SandboxPool({ workers: 2 });
    await pool.start();
  });
  afterAll(async () => {
    await pool?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('generates the same tasks for the same seed, every kind, and each program really prints its gold answer', async () => {
    const a = generateTasks({ seed: 4, n: 12 });
    expect(generateTasks({ seed: 4, n: 12 })).toEqual(a);
    expect(generateTasks({ seed: 5, n: 12 })).not.toEqual(a);
    expect(new Set(a.map((t) => t.kind))).toEqual(new Set(TASK_KINDS));
    const exec = sandboxExecutor(pool);
    for (const t of a) expect((await exec({ code: t.code })).stdout.trim(), t.problem).toBe(t.answer);
  });

  it('builds rStar2-format traces: one decodable tool call, the real tool response, a boxed answer; loss on model tokens only', async () => {
    const tok = new Tokenizer();
    const [task] = generateTasks({ seed: 9, n: 1, kinds: ['modpow'] });
    const trace = buildSftTrace(task, await sandboxExecutor(pool)({ code: task.code }), tok);
    expect(tok.decode(trace.tokenIds)).toBe(trace.text);
    expect(trace.text.startsWith(taskPrompt(task))).toBe(true);
    const call = parseTurn(trace.text).calls[0];
    expect(call).toMatchObject({ ok: true, code: task.code, input: '' });
    expect(trace.text).toContain(`<tool_response>\nstdout: ${task.answer}\nexecution time: `);
    expect(lastBoxed(trace.text)).toBe(task.answer);
    // Masked-out text = prompt + tool turn; trained text = the two assistant turns.
    const trained = tok.decode(trace.tokenIds.filter((_, i) => trace.lossMask[i] === 1));
    expect(trained).toContain('<tool_call>');
    expect(trained).toContain(`\\boxed{${task.answer}}`);
    expect(trained).not.toContain('<tool_response>');
    expect(trace.lossMask.slice(0, trace.promptLength).every((m) => m === 0)).toBe(true);
    expect(() => buildSftTrace(task, { status: 'ok', stdout: '1\n', stderr: '', exitCode: 0, signal: null, wallMs: 1, cpuMs: 1, truncated: false }, tok)).toThrow(/expected/);
  });

  it('runSft (smoke preset) trains, writes a loadable checkpoint and reports held-out scores', async () => {
    const out = join(tmp, 'ck');
    const phases = new Set<string>();
    const r = await runSft({ preset: 'smoke', steps: 6, outDir: out, execute: sandboxExecutor(pool) }, (p) => phases.add(p.phase));
    expect([...phases]).toEqual(['traces', 'train', 'eval']);
    expect(r.heldOut.n).toBe(8);
    expect(r.heldOut.toolFormat).toBeGreaterThanOrEqual(0);
    expect(r.heldOut.correct).toBeLessThanOrEqual(r.heldOut.toolFormat);
    const loaded = await PolicyModel.load(out);
    expect(loaded.hash).toBe(r.checkpoint.hash);
    expect(loaded.meta).toMatchObject({ stage: 'sft', steps: 6, heldOutN: 8 });
    loaded.dispose();
    r.model.dispose();
  });
});
