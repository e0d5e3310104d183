import { endsInMemoryError, responseTexts } from './output.text';
import type { ExecResult, ExecStatus } from './sandbox.types';
import type { StreamLengths, ZygoteFrame } from './zygote.frames';

/**
 * The {@link ExecResult} of a zygote's exec response: stdout/stderr decoded and cut to `capChars`
 * code points from the raw stream bytes, the zygote's fixed notes (task limit, forged session result)
 * appended to stderr, and a `runtime_error` that ends in a `MemoryError` line reported as
 * `memory_limit`. A zygote error (no streams) carries its own `stdout`/`stderr` text.
 * @throws Error when the frame's stream lengths and bytes disagree (a zygote bug)
 */
export function execResultOf(frame: ZygoteFrame, capChars: number): ExecResult {
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
  if (status === 'runtime_error' && signal === null && exitCode !== 0 && endsInMemoryError(stderr)) status = 'memory_limit';
  if (Array.isArray(m.stderrNotes)) stderr += (m.stderrNotes as unknown[]).map(String).join('');
  return { status, stdout, stderr, exitCode, signal, wallMs: Number(m.wallMs ?? 0), cpuMs: Number(m.cpuMs ?? 0), truncated };
}
