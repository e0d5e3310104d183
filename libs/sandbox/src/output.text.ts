import type { StreamLengths } from './zygote.frames';
import { ZygoteProtocolError } from './sandbox.errors';

/**
 * The text a program's stream shows (docs/design/sandbox.md, output caps): the zygote keeps its first and last
 * `4 * capChars + 4` bytes (`tail` is empty, or the bytes after `head`); here they are decoded as UTF-8 (an invalid sequence becomes U+FFFD, as
 * Python's "replace" does) and, when the text is longer than `capChars` code points, cut to head +
 * `\n...[output truncated: N bytes in total]...\n` + tail, the whole within the cap. A NUL shows as U+FFFD.
 *
 * @returns the text and whether it was cut
 */
export function streamText(head: Buffer, tail: Buffer, totalBytes: number, capChars: number): { text: string; truncated: boolean } {
  const cut = cutText(head, tail, totalBytes, capChars);
  // A NUL byte shows as U+FFFD: the event archive (Postgres) cannot hold U+0000, and the model, the archive
  // and a replay's re-execution must all see the same text.
  return cut.text.includes('\u0000') ? { text: cut.text.replaceAll('\u0000', '\uFFFD'), truncated: cut.truncated } : cut;
}

function cutText(head: Buffer, tail: Buffer, totalBytes: number, capChars: number): { text: string; truncated: boolean } {
  const cap = Math.max(0, capChars);
  let headCps: string[];
  let tailCps: string[];
  // Head and tail that hold the whole stream are decoded as one: apart, a character split between them
  // would show as two U+FFFD, and a stream just over the head's size would keep only a few tail chars.
  if (head.length + tail.length === totalBytes) {
    const full = (tail.length ? Buffer.concat([head, tail]) : head).toString('utf8');
    const cps = Array.from(full);
    if (cps.length <= cap) return { text: full, truncated: false };
    headCps = cps;
    tailCps = cps;
  } else {
    headCps = Array.from(head.toString('utf8'));
    tailCps = Array.from(tail.toString('utf8'));
  }
  const marker = `\n...[output truncated: ${totalBytes} bytes in total]...\n`;
  const keep = Math.max(0, cap - marker.length);
  const t = Math.floor(keep / 2);
  const h = keep - t;
  return { text: headCps.slice(0, h).join('') + marker + (t > 0 ? tailCps.slice(-t).join('') : ''), truncated: true };
}

/**
 * The stdout and stderr texts of an exec response: `streams` gives [head, tail, total] bytes of each,
 * their bytes lie back to back in `payload` (stdout head, stdout tail, stderr head, stderr tail).
 * @throws Error when the payload is shorter than the lengths say (a zygote bug)
 */
export function responseTexts(streams: StreamLengths[], payload: Buffer, capChars: number): { stdout: string; stderr: string; truncated: boolean } {
  let at = 0;
  const take = (n: number) => {
    if (at + n > payload.length) throw new ZygoteProtocolError(`zygote response announces ${at + n} stream bytes, sent ${payload.length}`);
    const b = payload.subarray(at, at + n);
    at += n;
    return b;
  };
  const [out, err] = streams.map(([h, t, total]) => streamText(take(h), take(t), total, capChars));
  return { stdout: out?.text ?? '', stderr: err?.text ?? '', truncated: Boolean(out?.truncated || err?.truncated) };
}

/**
 * A `runtime_error` whose stderr's last line starts with `MemoryError` hit the memory limit (an
 * allocation refused under RLIMIT_AS or a cgroup limit, caught by Python rather than the OOM killer).
 */
export function endsInMemoryError(stderr: string): boolean {
  const trimmed = stderr.trimEnd();
  return trimmed.slice(trimmed.lastIndexOf('\n') + 1).startsWith('MemoryError');
}
