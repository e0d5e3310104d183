/**
 * The byte framing between the pool and a zygote (libs/sandbox/python/rstar_zygote/frames.py). Program,
 * stdin and output travel as raw bytes beside a JSON header, never inside it, so the zygote can keep
 * them in mappings it unmaps after the call instead of parsing them onto its heap (where every later
 * call's fork would inherit them).
 */
import { ZygoteProtocolError } from './sandbox.errors';

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
    if (!Array.isArray(s) || s.length !== 3) throw new ZygoteProtocolError(`zygote response has a malformed stream entry: ${JSON.stringify(s)}`);
    n += Number(s[0]) + Number(s[1]);
  }
  return n;
}

/**
 * Splits a zygote's stdout into frames: a JSON line, then as many raw bytes as its `streams` announce.
 * A line that is not JSON (a stray write to the protocol fd) is skipped. Chunks of a payload are joined
 * once, when all of it is there (a capped output can be megabytes in 64 KiB reads).
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private header: Record<string, unknown> | null = null;
  private need = 0;

  constructor(private readonly onFrame: (f: ZygoteFrame) => void) {}

  /** @throws Error on a response line whose `streams` is malformed (the stream cannot be trusted past it) */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.header) {
        if (this.buffered < this.need) return;
        const all = this.takeAll();
        const msg = this.header;
        this.header = null;
        this.keep(all.subarray(this.need));
        this.onFrame({ msg, payload: all.subarray(0, this.need) });
        continue;
      }
      const all = this.takeAll();
      const nl = all.indexOf(0x0a);
      if (nl < 0) {
        this.keep(all);
        return;
      }
      this.keep(all.subarray(nl + 1));
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(all.subarray(0, nl).toString('utf8')) as Record<string, unknown>;
      } catch {
        continue;
      }
      this.header = msg;
      this.need = payloadBytes(msg);
    }
  }

  private takeAll(): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    this.chunks = [];
    this.buffered = 0;
    return all;
  }

  private keep(rest: Buffer): void {
    if (rest.length === 0) return;
    this.chunks.push(rest);
    this.buffered += rest.length;
  }
}
