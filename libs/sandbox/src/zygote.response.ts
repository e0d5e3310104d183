import { endsInMemoryError, responseTexts } from './output.text';
import type { ExecResult, ExecStatus } from './sandbox.types';
import type { StreamLengths, ZygoteFrame } from './zygote.frames';

/**
 * The line appended to stderr when the memory limit killed a call (the cgroup's OOM killer sends SIGKILL,
 * so the program itself could print nothing): shaped like the last line of Python's own `MemoryError`
 * traceback, so a caller that looks for `MemoryError` (as SandboxFusion's users do) finds it, and naming
 * the limit and the request field that sets it.
 */
export function memoryKillNote(memoryMb: number): string {
  return `MemoryError: rstar-sandbox: memory limit reached: a call may allocate at most ${memoryMb} MiB (memoryMb); the program was killed\n`;
}

/**
 * The {@link ExecResult} of a zygote's exec response: stdout/stderr decoded and cut to `capChars`
 * code points from the raw stream bytes, the zygote's fixed notes (task limit, forged session result)
 * appended to stderr, and a `runtime_error` that ends in a `MemoryError` line reported as
 * `memory_limit`. A call the memory limit killed gets {@link memoryKillNote} (`memoryMb`, the call's
 * limit in MiB) as the last line of its stderr. A zygote error (no streams) carries its own
 * `stdout`/`stderr` text.
 * @throws Error when the frame's stream lengths and bytes disagree (a zygote bug)
 */
export function execResultOf(frame: ZygoteFrame, capChars: number, memoryMb?: number): ExecResult {
  const m = frame.msg;
  let stdout = String(m.stdout ?? '');
  let stderr = String(m.stderr ?? '');
  let truncated = Boolean(m.truncated);
  if (Array.isArray(m.streams)) {
    ({ stdout, stderr, truncated } = responseTexts(m.streams as StreamLengths[], frame.payload, capChars));
  }
  let status = m.status as ExecStatus;
  const exitCode = (m.exitCode as number | null) ?? null;
  const signal = (m.signal as string | null) ?? null;
  const saidMemoryError = endsInMemoryError(stderr);
  if (status === 'runtime_error' && signal === null && exitCode !== 0 && saidMemoryError) status = 'memory_limit';
  if (Array.isArray(m.stderrNotes)) stderr += (m.stderrNotes as unknown[]).map(String).join('');
  // Killed (not a MemoryError the program printed itself): say so, or stderr would be empty.
  if (status === 'memory_limit' && memoryMb !== undefined && !saidMemoryError)
    stderr += (stderr && !stderr.endsWith('\n') ? '\n' : '') + memoryKillNote(memoryMb);
  return { status, stdout, stderr, exitCode, signal, wallMs: Number(m.wallMs ?? 0), cpuMs: Number(m.cpuMs ?? 0), truncated };
}
