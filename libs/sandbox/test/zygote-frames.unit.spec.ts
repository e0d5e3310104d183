import { describe, expect, it } from 'vitest';
import { endsInMemoryError, responseTexts, streamText } from '../src/output.text';
import { encodeRequest, FrameReader, type ZygoteFrame } from '../src/zygote.frames';
import { execResultOf, memoryKillNote } from '../src/zygote.response';

describe('zygote framing', () => {
  it('a request is its header length in 8 hex digits, the header with the payload lengths, then code and input bytes', () => {
    const b = encodeRequest({ op: 'exec', timeoutMs: 5 }, 'print("é")', 'ab😀');
    const n = parseInt(b.subarray(0, 8).toString('latin1'), 16);
    const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8'));
    expect(header).toEqual({ op: 'exec', timeoutMs: 5, payload: [11, 6] });
    expect(b.subarray(8 + n).toString('utf8')).toBe('print("é")ab😀');
    expect(encodeRequest({ op: 'ping' }).toString()).toBe(`${'{"op":"ping"}'.length.toString(16).padStart(8, '0')}{"op":"ping"}`);
  });

  it('splits responses into line + stream bytes however the chunks fall, skipping stray non-JSON lines', () => {
    const body = Buffer.from('out\n\xfftailerr', 'latin1');
    const stream = Buffer.concat([
      Buffer.from('{"ready":true}\nnot json\n'),
      Buffer.from(`{"status":"ok","streams":[[4,5,9],[3,0,3]]}\n`),
      body,
      Buffer.from('{"pong":true}\n'),
    ]);
    for (const size of [1, 2, 7, stream.length]) {
      const frames: ZygoteFrame[] = [];
      const r = new FrameReader((f) => frames.push(f));
      for (let i = 0; i < stream.length; i += size) r.push(stream.subarray(i, i + size));
      expect(frames.map((f) => f.msg)).toEqual([{ ready: true }, { status: 'ok', streams: [[4, 5, 9], [3, 0, 3]] }, { pong: true }]);
      expect(frames[1]!.payload.equals(body)).toBe(true);
      expect(frames[2]!.payload.length).toBe(0);
    }
  });

  it('refuses a malformed stream entry (the worker is then replaced)', () => {
    const r = new FrameReader(() => undefined);
    expect(() => r.push(Buffer.from('{"streams":[[1,2]]}\n'))).toThrow(/malformed stream entry/);
  });
});

describe('output text from stream bytes', () => {
  it('shows a NUL byte as U+FFFD (the archive cannot hold U+0000), whole or cut', () => {
    expect(streamText(Buffer.from('a\u0000b\n'), Buffer.alloc(0), 4, 100)).toEqual({ text: 'a\uFFFDb\n', truncated: false });
    const cut = streamText(Buffer.from('\u0000'.repeat(404)), Buffer.from('\u0000YZ'), 10_000, 100);
    expect(cut.truncated).toBe(true);
    expect(cut.text).not.toContain('\u0000');
    expect(cut.text.startsWith('\uFFFD')).toBe(true);
  });

  it('keeps text within the cap whole, counting code points, not UTF-16 units or bytes', () => {
    expect(streamText(Buffer.from('😀😀😀'), Buffer.alloc(0), 12, 3)).toEqual({ text: '😀😀😀', truncated: false });
  });

  it('cuts longer text to head + marker + tail within the cap (the marker names the total bytes)', () => {
    const full = Buffer.from(`${'a'.repeat(60)}${'z'.repeat(60)}`);
    const { text, truncated } = streamText(full, Buffer.alloc(0), 120, 70);
    const marker = '\n...[output truncated: 120 bytes in total]...\n';
    expect(truncated).toBe(true);
    expect(marker.length).toBe(46);
    expect(text).toBe(`${'a'.repeat(12)}${marker}${'z'.repeat(12)}`);
    expect(Array.from(text).length).toBe(70);
    // Head and tail kept apart by the zygote (a flood): each decoded on its own.
    const cut = streamText(Buffer.from('head-bytes'), Buffer.from('tail-bytes'), 10_000, 60);
    expect(cut).toEqual({ text: 'head-b\n...[output truncated: 10000 bytes in total]...\n-bytes', truncated: true });
  });

  it('a stream just over the head size keeps a full tail, and a character split between head and tail stays whole', () => {
    // cap 100 chars -> the zygote keeps 404 head bytes, then the rest (3 bytes) as the tail.
    const r = streamText(Buffer.from('a'.repeat(404)), Buffer.from('XYZ'), 407, 100);
    expect(Array.from(r.text).length).toBe(100);
    expect(r.text.endsWith(`${'a'.repeat(24)}XYZ`)).toBe(true);
    const euro = Buffer.from('€'.repeat(200)); // 600 bytes, split inside a character at 404
    const e = streamText(euro.subarray(0, 404), euro.subarray(404), 600, 100);
    expect(e.text).not.toMatch(/\ufffd/);
    expect(Array.from(e.text).length).toBe(100);
  });

  it('decodes invalid UTF-8 as Python\'s "replace" does (one U+FFFD per maximal invalid subpart)', () => {
    expect(streamText(Buffer.from('eda08078', 'hex'), Buffer.alloc(0), 4, 100).text).toBe('\ufffd\ufffd\ufffdx');
    expect(streamText(Buffer.from('61e282', 'hex'), Buffer.alloc(0), 3, 100).text).toBe('a\ufffd');
  });

  it('reads both streams from one payload and says when the lengths lie', () => {
    const p = Buffer.from('OUTERR');
    expect(responseTexts([[3, 0, 3], [3, 0, 3]], p, 100)).toEqual({ stdout: 'OUT', stderr: 'ERR', truncated: false });
    expect(() => responseTexts([[3, 0, 3], [4, 0, 4]], p, 100)).toThrow(/announces 7 stream bytes, sent 6/);
  });

  it('a runtime error whose stderr ends in MemoryError is memory_limit; notes follow the text', () => {
    expect(endsInMemoryError('Traceback...\nMemoryError\n\n')).toBe(true);
    expect(endsInMemoryError('MemoryError: x\nValueError')).toBe(false);
    const err = Buffer.from('Traceback (most recent call last):\nMemoryError\n');
    const frame = (status: string, exitCode: number | null, signal: string | null) => ({
      msg: { status, exitCode, signal, wallMs: 3, cpuMs: 2, streams: [[0, 0, 0], [err.length, 0, err.length]], stderrNotes: ['note\n'] },
      payload: err,
    });
    expect(execResultOf(frame('runtime_error', 1, null), 1000)).toMatchObject({ status: 'memory_limit', stderr: `${err}note\n`, wallMs: 3 });
    expect(execResultOf(frame('runtime_error', null, 'SIGSEGV'), 1000).status).toBe('runtime_error');
    expect(execResultOf({ msg: { status: 'sandbox_error', stdout: '', stderr: 'rstar-sandbox: x', exitCode: null, signal: null }, payload: Buffer.alloc(0) }, 10))
      .toMatchObject({ status: 'sandbox_error', stderr: 'rstar-sandbox: x' });
  });

  it('a call the memory limit killed ends its stderr with one MemoryError line naming the limit', () => {
    const out = Buffer.from('partial');
    const killed = { msg: { status: 'memory_limit', exitCode: null, signal: 'SIGKILL', wallMs: 3, cpuMs: 2, streams: [[0, 0, 0], [out.length, 0, out.length]], stderrNotes: [] }, payload: out };
    const r = execResultOf(killed, 1000, 384);
    expect(r.status).toBe('memory_limit');
    expect(r.stderr).toBe(`partial\n${memoryKillNote(384)}`);
    expect(memoryKillNote(384)).toMatch(/^MemoryError: .*384 MiB \(memoryMb\).*\n$/);
    expect(endsInMemoryError(r.stderr)).toBe(true);
    // A MemoryError the program printed itself (RLIMIT_AS) already says it: nothing added.
    const tb = Buffer.from('Traceback (most recent call last):\nMemoryError\n');
    const own = { msg: { status: 'runtime_error', exitCode: 1, signal: null, wallMs: 3, cpuMs: 2, streams: [[0, 0, 0], [tb.length, 0, tb.length]] }, payload: tb };
    expect(execResultOf(own, 1000, 384).stderr).toBe(String(tb));
  });
});
