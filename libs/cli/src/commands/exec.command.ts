import type { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { HttpExecutor, SandboxPool, runExecLines, type Executor } from '@rstar/sandbox';
import { assertReadableFile } from '../input-file';

/**
 * `rstar exec [file] [--concurrency N] [--remote URL]`: JSON lines `{id, code, input?, timeoutMs?,
 * memoryMb?, session?}` from the file or stdin, one result line per call `{id, status, stdout, stderr,
 * exitCode, signal, wallMs, cpuMs, truncated}` in input order. In-process sandbox pool by default.
 */
export function register(program: Command): void {
  program
    .command('exec')
    .description('run Python programs from JSON lines in the sandbox; one JSON result line per input line, in order')
    .argument('[file]', 'JSON-lines file (default: stdin)')
    .option('--concurrency <n>', 'calls in flight', '8')
    .option('--remote <url>', 'use a running tool-execution service instead of an in-process pool')
    .option('--workers <n>', 'in-process pool size (default: CPU count)')
    .action(async (file: string | undefined, o: { concurrency: string; remote?: string; workers?: string }) => {
      const concurrency = Number(o.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`--concurrency must be a positive integer, got "${o.concurrency}"`);
      const workers = o.workers === undefined ? undefined : Number(o.workers);
      if (workers !== undefined && (!Number.isInteger(workers) || workers < 1)) throw new Error(`--workers must be a positive integer, got "${o.workers}"`);
      // Fail before the pool starts (seconds) and with a message that says the fix, not a raw ENOENT.
      if (file !== undefined) assertReadableFile(file);
      if (o.remote) await assertServiceReachable(o.remote);
      let pool: SandboxPool | null = null;
      let executor: Executor;
      if (o.remote) executor = new HttpExecutor(o.remote);
      else {
        pool = new SandboxPool({ workers, onWarning: (m) => process.stderr.write(`rstar exec: WARNING: ${m}\n`) });
        await pool.start();
        executor = pool;
      }
      try {
        const input = file ? createReadStream(file, 'utf8') : process.stdin;
        const lines = createInterface({ input, crlfDelay: Infinity });
        const counts = await runExecLines(lines, executor, { concurrency }, (l) => process.stdout.write(JSON.stringify(l) + '\n'));
        process.stderr.write(`rstar exec: ${JSON.stringify(counts)}\n`);
      } finally {
        await pool?.close();
      }
    });
}


/**
 * Probe `GET <url>/health` once, so a wrong `--remote` is one clear error instead of a `sandbox_error`
 * result on every line. @throws Error naming the URL and the fix.
 */
async function assertServiceReachable(url: string): Promise<void> {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new Error(`--remote must be an http(s) URL of a tool-execution service, e.g. http://127.0.0.1:3001, got "${url}"`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error(`--remote must be an http(s) URL, got "${url}"`);
  try {
    const res = await fetch(url.replace(/\/$/, '') + '/health', { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`GET /health answered HTTP ${res.status}`);
  } catch (e) {
    const why = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e);
    throw new Error(`cannot reach the tool-execution service at ${url} (${why}); start it or drop --remote to use an in-process sandbox pool`);
  }
}
