import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPool } from '@rstar/sandbox';
import { parseTurn } from '@rstar/agent';
import { sandboxExecutor, type CodeExecutor } from '../code.executor';
import { PolicyModel } from '../policy.model';
import { runSft } from '../sft.runner';
import { Tokenizer } from '../tokenizer';
import { lastBoxed } from './heldout.evaluator';
import { buildNoisyCorrectTrace, buildSftTrace, recoveryTurn, taskPrompt } from './sft-trace.builder';
import { TASK_KINDS, generateTasks } from './task.generator';
import { TRAILING_CHECK, planToolErrors, toolErrorTokenizerSpec } from './tool-error.variants';
import { formatToolResponse } from '@rstar/agent';

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

  it('builds err-and-recover traces: a failing call with its REAL sandbox error, the corrected call, the answer', async () => {
    const tok = new Tokenizer(toolErrorTokenizerSpec());
    const exec = sandboxExecutor(pool);
    const tasks = generateTasks({ seed: 21, n: 24 });
    const plan = planToolErrors(tasks, 1, 5);
    const seen = new Set<string>();
    for (let i = 0; i < tasks.length; i++) {
      const t = tasks[i];
      const bug = plan[i]!;
      const failedResult = await exec({ code: bug.code });
      expect(failedResult.status, bug.code).toBe('runtime_error');
      const trace = buildSftTrace(t, await exec({ code: t.code }), tok, { code: bug.code, result: failedResult });
      expect(tok.decode(trace.tokenIds)).toBe(trace.text);
      const turns = trace.text.split('<|im_start|>assistant\n');
      const [first, second] = [parseTurn(turns[1]).calls[0], parseTurn(turns[2]).calls[0]];
      expect(first).toMatchObject({ ok: true, code: bug.code });
      expect(second).toMatchObject({ ok: true, code: t.code });
      expect(trace.text).toContain(recoveryTurn(t.code));
      const errorLine = bug.kind === 'unclosed-paren' ? "SyntaxError: '(' was never closed" : `NameError: name '${bug.kind === 'missing-import' ? 'math' : 'x'}' is not defined`;
      expect(trace.text).toContain(errorLine);
      expect(failedResult.stderr).toContain(errorLine);
      seen.add(bug.kind);
      expect(lastBoxed(trace.text)).toBe(t.answer);
      // Trained text: both calls and the answer; never the error output.
      const trained = tok.decode(trace.tokenIds.filter((_, j) => trace.lossMask[j] === 1));
      expect(trained).not.toContain('Error');
      expect(trained).toContain(bug.code);
    }
    expect(seen.size).toBe(3);
    const [task] = tasks;
    const ok = await exec({ code: task.code });
    expect(() => buildSftTrace(task, ok, tok, { code: task.code, result: ok })).toThrow(/needs a call that fails/);
  });

  it('builds noisy-but-correct traces: ONE call prints the answer then fails (runtime_error), the answer comes from its stdout', async () => {
    const tok = new Tokenizer(toolErrorTokenizerSpec());
    const exec = sandboxExecutor(pool);
    const tasks = generateTasks({ seed: 22, n: 12 });
    const plan = planToolErrors(tasks, 1, 5, ['trailing-check']);
    for (let i = 0; i < tasks.length; i++) {
      const t = tasks[i];
      const bug = plan[i]!;
      expect(bug).toEqual({ kind: 'trailing-check', code: t.code + TRAILING_CHECK });
      const result = await exec({ code: bug.code });
      expect(result.status, bug.code).toBe('runtime_error');
      expect(result.stdout.trim()).toBe(t.answer);
      expect(result.stderr).toContain("NameError: name 'check' is not defined");
      const trace = buildNoisyCorrectTrace(t, { code: bug.code, result }, tok);
      expect(tok.decode(trace.tokenIds)).toBe(trace.text);
      const turns = trace.text.split('<|im_start|>assistant\n');
      expect(turns).toHaveLength(3); // prompt, the one call, the answer: no recovery turn
      expect(parseTurn(turns[1]).calls).toMatchObject([{ ok: true, code: bug.code }]);
      // The model sees the answer in the tool response as cut to 256 chars (first 128 kept), stdout first.
      expect(formatToolResponse(result).slice(0, 128)).toContain(`stdout: ${t.answer}\n`);
      expect(trace.text).toContain(formatToolResponse(result));
      expect(lastBoxed(trace.text)).toBe(t.answer);
      const trained = tok.decode(trace.tokenIds.filter((_, j) => trace.lossMask[j] === 1));
      expect(trained).toContain(TRAILING_CHECK);
      expect(trained).not.toContain('Error');
    }
    const [task] = tasks;
    const ok = await exec({ code: task.code });
    expect(() => buildNoisyCorrectTrace(task, { code: task.code, result: ok }, tok)).toThrow(/must print .* and then fail/);
    const wrong = await exec({ code: 'print(1); print(check)' });
    expect(() => buildNoisyCorrectTrace(task, { code: 'print(1); print(check)', result: wrong }, tok)).toThrow(/noisy call/);
  });

  it('runSft with toolErrorRate trains on err-and-recover traces with the tool-error tokenizer', async () => {
    const out = join(tmp, 'ck-err');
    const r = await runSft({ preset: 'smoke', steps: 2, trainSize: 16, toolErrorRate: 0.5, model: { context: 192 }, outDir: out, execute: sandboxExecutor(pool) });
    expect(r.model.tokenizer.spec).toEqual(toolErrorTokenizerSpec());
    expect(r.model.meta).toMatchObject({ toolErrorRate: 0.5 });
    r.model.dispose();
  });

  it('runSft of one seed gives the same checkpoint however long the calls took (a loaded machine shows longer times)', async () => {
    const slowedBy = (extraMs: () => number): CodeExecutor => {
      const execute = sandboxExecutor(pool);
      return async (req) => {
        const r = await execute(req);
        return { ...r, wallMs: r.wallMs + extraMs() };
      };
    };
    const hashes: string[] = [];
    for (const [i, extra] of [() => 0, () => Math.random() * 900].entries()) {
      const r = await runSft({ preset: 'smoke', steps: 4, trainSize: 32, seed: 5, outDir: join(tmp, `ck-det-${i}`), execute: slowedBy(extra) });
      hashes.push(r.checkpoint.hash);
      r.model.dispose();
    }
    expect(hashes[1]).toBe(hashes[0]);
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
