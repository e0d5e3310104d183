import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPool, type ExecResult, type ExecStatus } from '../src';
import { sandboxEnv } from '../src/bwrap.args';
import { PARITY_CASES, type ParityCase } from './parity.corpus';

/**
 * Parity with CPython: every program of parity.corpus.ts runs under plain `python3 prog.py` (the
 * sandbox's own interpreter, its environment variables, stdin, a fresh temp dir as cwd) and through the
 * sandbox with `echo: false`, stateless and as the first cell of a fresh session; stdout, stderr, exit
 * code, signal and status must be equal. Two things are normalised, each for a reason the README gives
 * ("Parity with python3"): the program's file name (`/tmp/.../prog.py` there, `<code>` here) and object
 * addresses (`0x7f...`, different in every process). Where a limit applies (`timeoutMs`), both sides
 * are stopped at it and status and stdout are compared.
 */
const DEFAULT_TIMEOUT = 8_000;
let pool: SandboxPool;

interface Outcome {
  status: ExecStatus;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: string | null;
}

/** Run `prog.py` in a fresh directory with plain python3, killed at `timeoutMs`; its outcome as the sandbox classifies one. */
function reference(python: string, c: ParityCase, timeoutMs: number): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'rstar-parity-'));
  const prog = join(dir, 'prog.py');
  writeFileSync(prog, c.code);
  const env = { ...sandboxEnv(dir), TMPDIR: dir };
  return new Promise((resolve) => {
    const p = spawn(python, [prog], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    p.stdout.on('data', (d: Buffer) => out.push(d));
    p.stderr.on('data', (d: Buffer) => err.push(d));
    p.stdin.on('error', () => undefined);
    p.stdin.end(c.stdin ?? '');
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      p.kill('SIGKILL');
    }, timeoutMs);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      const norm = (b: Buffer[]) => normalise(Buffer.concat(b).toString('utf8').split(prog).join('<code>'));
      const status: ExecStatus = timedOut
        ? 'timeout'
        : signal === 'SIGKILL' || signal === 'SIGTERM'
          ? 'killed'
          : signal !== null || code !== 0
            ? 'runtime_error'
            : 'ok';
      resolve({ status, stdout: norm(out), stderr: norm(err), exitCode: code, signal });
    });
  });
}

const normalise = (s: string) => s.replace(/0x[0-9a-f]{6,16}/g, '0x...');

function outcome(r: ExecResult): Outcome {
  return { status: r.status, stdout: normalise(r.stdout), stderr: normalise(r.stderr), exitCode: r.exitCode, signal: r.signal };
}

beforeAll(async () => {
  pool = new SandboxPool({ workers: 2, onWarning: () => undefined });
  await pool.start();
});

afterAll(async () => {
  await pool?.close();
});

describe('parity with python3 prog.py', () => {
  it('the corpus covers what the parity contract lists', () => {
    const ids = PARITY_CASES.map((c) => c.id).join(' ');
    for (const topic of ['thread', 'atexit', 'sys-exit', 'exception', 'main', 'stdin', 'surrogate', 'flush', 'warning', 'multiprocessing', 'signal', 'recursion', 'input-at-eof', 'large-int', 'locale'])
      expect(ids, topic).toContain(topic);
  });

  for (const c of PARITY_CASES) {
    it(c.id, async () => {
      const timeoutMs = c.timeoutMs ?? DEFAULT_TIMEOUT;
      const session = `parity-${c.id}`;
      const req = { code: c.code, input: c.stdin ?? '', echo: false, timeoutMs, outputChars: 100_000 };
      const [ref, stateless, inSession] = await Promise.all([
        reference(pool.health().python.path, c, timeoutMs),
        pool.execute(req),
        c.notInSession ? Promise.resolve(null) : pool.execute({ ...req, session }),
      ]);
      if (!c.notInSession) await pool.endSession(session);
      if (c.timeoutMs) {
        // The limit applies: both sides were stopped at it.
        expect(ref.status).toBe('timeout');
        expect(outcome(stateless)).toMatchObject({ status: ref.status, stdout: ref.stdout });
        if (inSession) expect(outcome(inSession)).toMatchObject({ status: ref.status, stdout: ref.stdout });
        return;
      }
      expect(outcome(stateless), 'stateless').toEqual(ref);
      if (inSession) expect(outcome(inSession), 'session').toEqual(ref);
    }, 60_000);
  }
});
