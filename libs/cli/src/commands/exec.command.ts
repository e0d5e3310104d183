import { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { RstarError } from '@rstar/contracts';
import { HttpExecutor, SandboxPool, runExecLines, type Executor } from '@rstar/sandbox';
import { assertReadableFile } from '../input-file';

/**
 * Exit codes of `rstar exec`. What the programs did (errors, timeouts, kills) never changes the exit
 * code: that is in each result line's `status`.
 */
export const EXEC_EXIT = {
  /** Every input line was a valid request and was run. */
  ok: 0,
  /** At least one line was not a valid request (its result line is an `invalid_request` naming the field); the others ran. */
  invalidLines: 1,
  /** Usage error (bad option or argument, missing input file, malformed --remote URL): nothing ran. */
  usage: 2,
  /** The sandbox could not be used (the pool failed to start, the --remote service is unreachable): nothing ran. */
  sandboxUnavailable: 3,
} as const;

/** Thrown inside the action for exit code {@link EXEC_EXIT.sandboxUnavailable}. */
class SandboxUnavailableError extends RstarError {
  constructor(message: string, cause?: unknown) {
    super('sandbox_unavailable', message, null, { cause });
  }
}

const EXIT_HELP = `
Exit codes:
  0  every line was a valid request and ran (whatever the programs did: see each line's status)
  1  some lines were not valid requests (their result is an invalid_request naming the field); the rest ran
  2  usage error (bad option or argument, missing input file, malformed --remote URL); nothing ran
  3  the sandbox could not be used (pool failed to start, --remote unreachable); nothing ran`;

/**
 * `rstar exec [file] [--concurrency N] [--remote URL]`: JSON lines `{id, code, input?, timeoutMs?,
 * memoryMb?, session?}` from the file or stdin, one result line per call `{id, status, stdout, stderr,
 * exitCode, signal, wallMs, cpuMs, truncated}` in input order. In-process sandbox pool by default.
 * Exit codes: {@link EXEC_EXIT}.
 */
export function register(program: Command): void {
  const cmd = new Command('exec')
    .description('run Python programs from JSON lines in the sandbox; one JSON result line per input line, in order')
    .argument('[file]', 'JSON-lines file (default: stdin)')
    .option('--concurrency <n>', 'calls in flight', '8')
    .option('--remote <url>', 'use a running tool-execution service instead of an in-process pool')
    .option('--workers <n>', 'in-process pool size (default: CPU count)')
    .addHelpText('after', EXIT_HELP)
    // Commander's own parse errors (unknown option, extra argument) are usage errors too; help is 0.
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : EXEC_EXIT.usage));
  program.addCommand(cmd);
  cmd.action(async (file: string | undefined, o: { concurrency: string; remote?: string; workers?: string }) => {
    const usage = (message: string): never => cmd.error(`rstar exec: ${message}`, { exitCode: EXEC_EXIT.usage, code: 'rstar.exec.usage' });
    const concurrency = Number(o.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1) usage(`--concurrency must be a positive integer, got "${o.concurrency}"`);
    const workers = o.workers === undefined ? undefined : Number(o.workers);
    if (workers !== undefined && (!Number.isInteger(workers) || workers < 1)) usage(`--workers must be a positive integer, got "${o.workers}"`);
    // Fail before the pool starts (seconds) and with a message that says the fix, not a raw ENOENT.
    if (file !== undefined) {
      try {
        assertReadableFile(file);
      } catch (e) {
        usage((e as Error).message);
      }
    }
    let pool: SandboxPool | null = null;
    try {
      let executor: Executor;
      if (o.remote) {
        const url = remoteUrl(o.remote);
        if (typeof url === 'string') usage(url);
        await assertServiceReachable(o.remote);
        executor = new HttpExecutor(o.remote);
      } else {
        pool = new SandboxPool({ workers, onWarning: (m) => process.stderr.write(`rstar exec: WARNING: ${m}\n`) });
        try {
          await pool.start();
        } catch (e) {
          throw new SandboxUnavailableError(`the sandbox pool could not start: ${(e as Error).message}`, e);
        }
        executor = pool;
      }
      const input = file ? createReadStream(file, 'utf8') : process.stdin;
      const lines = createInterface({ input, crlfDelay: Infinity });
      const summary = await runExecLines(lines, executor, { concurrency }, (l) => process.stdout.write(JSON.stringify(l) + '\n'));
      process.stderr.write(`rstar exec: ${JSON.stringify(summary)}\n`);
      process.exitCode = summary.invalid > 0 ? EXEC_EXIT.invalidLines : EXEC_EXIT.ok;
    } catch (e) {
      if (!(e instanceof SandboxUnavailableError)) throw e;
      process.stderr.write(`rstar exec: ${e.message}\n`);
      process.exitCode = EXEC_EXIT.sandboxUnavailable;
    } finally {
      await pool?.close();
    }
  });
}

/** The parsed --remote URL, or why it is malformed. */
function remoteUrl(url: string): URL | string {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    return `--remote must be an http(s) URL of a tool-execution service, e.g. http://127.0.0.1:3001, got "${url}"`;
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') return `--remote must be an http(s) URL, got "${url}"`;
  return base;
}

/**
 * Probe `GET <url>/health/ready` once, so a wrong `--remote` is one clear error instead of a `sandbox_error`
 * result on every line. @throws SandboxUnavailableError naming the URL and the fix.
 */
async function assertServiceReachable(url: string): Promise<void> {
  const unavailable = (why: string, cause?: unknown) =>
    new SandboxUnavailableError(`cannot reach the tool-execution service at ${url} (${why}); start it or drop --remote to use an in-process sandbox pool`, cause);
  let res: Response;
  try {
    res = await fetch(url.replace(/\/$/, '') + '/health/ready', { signal: AbortSignal.timeout(10_000) });
  } catch (e) {
    throw unavailable(e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e), e);
  }
  if (!res.ok) throw unavailable(`GET /health/ready answered HTTP ${res.status}`);
}
