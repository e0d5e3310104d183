/**
 * The byte framing between the pool and a zygote (libs/sandbox/python/zygote.py, module doc). Program,
 * stdin and output travel as raw bytes beside a JSON header, never inside it, so the zygote can keep
 * them in mappings it unmaps after the call instead of parsing them onto its heap (where every later
 * call's fork would inherit them).
 */

/** One response: the JSON line, and the raw stream bytes it announces under `streams`. */
export interface ZygoteFrame {
  msg: Record<string, unknown>;
  /** stdout head, stdout tail, stderr head, stderr tail, back to back (empty for a message without streams). */
  payload: Buffer;
}

/** [head bytes, tail bytes, total bytes] of one stream, as the response line gives them. */
export type StreamLengths = [number, number, number];

/**
 * A request: 8 hex digits giving the header's UTF-8 length, the header, then `code` and `input` as
 * UTF-8 (their byte lengths go into the header as `payload`).
 * @throws RangeError when the header is longer than 8 hex digits can say (4 GiB)
 */
export function encodeRequest(header: Record<string, unknown>, code?: string, input?: string): Buffer {
  const parts: Buffer[] = [];
  let h = header;
  if (code !== undefined || input !== undefined) {
    const c = Buffer.from(code ?? '', 'utf8');
    const i = Buffer.from(input ?? '', 'utf8');
    h = { ...header, payload: [c.length, i.length] };
    parts.push(c, i);
  }
  const json = Buffer.from(JSON.stringify(h), 'utf8');
  if (json.length > 0xffffffff) throw new RangeError(`request header of ${json.length} bytes is too long`);
  return Buffer.concat([Buffer.from(json.length.toString(16).padStart(8, '0'), 'latin1'), json, ...parts]);
}

function payloadBytes(msg: Record<string, unknown>): number {
  const streams = msg.streams;
  if (!Array.isArray(streams)) return 0;
  let n = 0;
  for (const s of streams as unknown[]) {
    if (!Array.isArray(s) || s.length !== 3) throw new Error(`zygote response has a malformed stream entry: ${JSON.stringify(s)}`);
    n += Number(s[0]) + Number(s[1]);
  }
  return n;
}

/**
 * Splits a zygote's stdout into frames: a JSON line, then as many raw bytes as its `streams` announce.
 * A line that is not JSON (a stray write to the protocol fd) is skipped, as before.
 */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  private header: Record<string, unknown> | null = null;
  private need = 0;

  constructor(private readonly onFrame: (f: ZygoteFrame) => void) {}

  push(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      if (this.header) {
        if (this.buf.length < this.need) return;
        const payload = this.buf.subarray(0, this.need);
        this.buf = this.buf.subarray(this.need);
        const msg = this.header;
        this.header = null;
        this.onFrame({ msg, payload: Buffer.from(payload) });
        continue;
      }
      const nl = this.buf.indexOf(0x0a);
      if (nl < 0) return;
      const line = this.buf.subarray(0, nl).toString('utf8');
      this.buf = this.buf.subarray(nl + 1);
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      this.header = msg;
      this.need = payloadBytes(msg);
    }
  }
}
