import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ExecResult } from '@rstar/agent';

/** Runs one Python program: what SFT trace building and the held-out evaluation need from a sandbox. */
export type CodeExecutor = (req: { code: string; input?: string }) => Promise<ExecResult>;

const WRAPPER = [
  'import resource, sys',
  'lim = int(sys.argv[2]) * 1024 * 1024',
  'resource.setrlimit(resource.RLIMIT_AS, (lim, lim))',
  'resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))',
  'src = sys.argv[1]',
  'del sys.argv[1:]',
  "exec(compile(src, '<code>', 'exec'), {'__name__': '__main__'})",
].join('\n');

/**
 * A minimal local executor: one child `python -I` per call with an address-space rlimit, a wall-clock
 * kill and output caps (PROTOCOL §3 defaults: 4 s, 384 MB, 1,000 chars per stream). It is NOT an isolation
 * boundary (no namespaces); it runs only the fixed-form programs of the task family and a tiny model's
 * attempts at them during evaluation. POLICY-NOTES: never evaluate model code without limits.
 */
export function createLocalExecutor(opts: { python?: string; timeoutMs?: number; memoryMb?: number; outputChars?: number } = {}): CodeExecutor {
  const repoRoot = resolve(__dirname, '../../..');
  const python = opts.python ?? process.env.RSTAR_PYTHON ?? (existsSync(resolve(repoRoot, '.venv/bin/python')) ? resolve(repoRoot, '.venv/bin/python') : 'python3');
  const timeoutMs = opts.timeoutMs ?? 4000;
  const memoryMb = opts.memoryMb ?? 384;
  const cap = opts.outputChars ?? 1000;
  return (req) =>
    new Promise<ExecResult>((done) => {
      const t0 = process.hrtime.bigint();
      const child = spawn(python, ['-I', '-c', WRAPPER, req.code, String(memoryMb)], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      let truncated = false;
      let timedOut = false;
      const add = (cur: string, chunk: Buffer): string => {
        const next = cur + chunk.toString('utf8');
        if (next.length > cap) truncated = true;
        return next.slice(0, cap);
      };
      child.stdout.on('data', (c: Buffer) => (stdout = add(stdout, c)));
      child.stderr.on('data', (c: Buffer) => (stderr = add(stderr, c)));
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, timeoutMs);
      child.on('error', (e) => {
        clearTimeout(timer);
        done({ status: 'sandbox_error', stdout, stderr: String(e), exitCode: null, signal: null, wallMs: 0, cpuMs: 0, truncated });
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
        const status = timedOut ? 'timeout' : /MemoryError/.test(stderr) ? 'memory_limit' : code === 0 ? 'ok' : signal ? 'killed' : 'runtime_error';
        done({ status, stdout, stderr, exitCode: code, signal: signal ?? null, wallMs, cpuMs: 0, truncated });
      });
      child.stdin.end(req.input ?? '');
    });
}
