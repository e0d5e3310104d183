import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXEC_EXIT } from './exec.command';

/** `rstar exec` as a user runs it (a real process, a real sandbox pool), checked by its exit code. */
const ROOT = resolve(__dirname, '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'rstar-exec-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One `rstar exec` run; the CLI starts of a file run side by side (each is ~2 s of CPU, mostly waiting on its own imports). */
function rstarExec(args: string[], lines?: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let file: string[] = [];
  if (lines) {
    const f = join(dir, `in-${Math.random().toString(36).slice(2)}.jsonl`);
    writeFileSync(f, lines.join('\n') + '\n');
    file = [f];
  }
  return new Promise((done) => {
    const child = execFile(join(ROOT, 'node_modules/.bin/tsx'), ['libs/cli/src/main.ts', 'exec', ...file, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 }, (_e, stdout, stderr) =>
      done({ code: child.exitCode, stdout, stderr }),
    );
  });
}
const results = (stdout: string) => stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: unknown; status: string; stderr: string });

// Independent CLI runs, each with its own input file: the tests run concurrently. Eight CLI starts at
// once (~1.5 s of CPU each): a loaded machine stretches them far past the default minute.
describe.concurrent('rstar exec exit codes', () => {
  it('0 when every line is a valid request, whatever the programs did', async () => {
    const r = await rstarExec(['--workers', '1'], [JSON.stringify({ id: 1, code: 'print(1)' }), JSON.stringify({ id: 2, code: '1/0' }), JSON.stringify({ id: 3, code: 'import sys; sys.exit(4)' })]);
    expect(r.code, r.stderr).toBe(EXEC_EXIT.ok);
    expect(results(r.stdout).map((l) => l.status)).toEqual(['ok', 'runtime_error', 'runtime_error']);
  }, 600_000);

  it('1 when some lines (or every line) are not valid requests; the valid ones still run', async () => {
    const [some, all] = await Promise.all([
      rstarExec(['--workers', '1'], [JSON.stringify({ id: 1, code: 'print(1)' }), 'not json', JSON.stringify({ id: 3, code: 'print(3)', timeoutMs: -5 })]),
      rstarExec(['--workers', '1'], ['{', JSON.stringify({ id: 2 })]),
    ]);
    expect(some.code, some.stderr).toBe(EXEC_EXIT.invalidLines);
    const lines = results(some.stdout);
    expect(lines.map((l) => l.status)).toEqual(['ok', 'invalid_request', 'invalid_request']);
    expect(lines[2]!.stderr).toMatch(/timeoutMs/);
    expect(all.code, all.stderr).toBe(EXEC_EXIT.invalidLines);
    expect(results(all.stdout).map((l) => l.status)).toEqual(['invalid_request', 'invalid_request']);
  }, 600_000);

  it('2 for usage errors, before anything runs', async () => {
    const usage = [['--concurrency', '0'], ['--workers', 'many'], ['--no-such-option'], ['--remote', 'ftp://example.org']];
    const [missing, ...rs] = await Promise.all([
      rstarExec([join(dir, 'no-such-file.jsonl')]),
      ...usage.map((args) => rstarExec(args, [JSON.stringify({ id: 1, code: 'print(1)' })])),
    ]);
    rs.forEach((r, i) => {
      expect(r!.code, `${usage[i]!.join(' ')}: ${r!.stderr}`).toBe(EXEC_EXIT.usage);
      expect(r!.stdout).toBe('');
    });
    expect(missing!.code).toBe(EXEC_EXIT.usage);
    expect(missing!.stderr).toMatch(/does not exist/);
  }, 600_000);

  it('3 when the sandbox cannot be used (unreachable --remote service)', async () => {
    const r = await rstarExec(['--remote', 'http://127.0.0.1:9'], [JSON.stringify({ id: 1, code: 'print(1)' })]);
    expect(r.code).toBe(EXEC_EXIT.sandboxUnavailable);
    expect(r.stderr).toMatch(/cannot reach the tool-execution service/);
    expect(r.stdout).toBe('');
  }, 600_000);
});
