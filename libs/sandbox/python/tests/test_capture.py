"""Capture and cut rules (rstar_zygote.capture): head + tail of a stream under the byte cap, the hard
cap, the session result line; through real pipes."""
import os
import tempfile
import time

from rstar_zygote.capture import Capture, ResultLine, pump


def collected(c):
    """What the response carries for a capture: its head and tail bytes (through a file: a pipe would
    block on more than its 64 KiB)."""
    with tempfile.TemporaryFile() as f:
        c.write_to(f.fileno())
        f.seek(0)
        return f.read()


def fill(c, data, chunk=4096):
    r, w = os.pipe()
    try:
        for i in range(0, len(data), chunk):
            part = data[i:i + chunk]
            os.write(w, part)
            got = 0
            while got < len(part):
                got += c.read_from(r)
    finally:
        os.close(r)
        os.close(w)


def test_short_stream_kept_whole():
    c = Capture(10)
    fill(c, b"hello\n")
    assert c.lengths() == [6, 0, 6]
    assert collected(c) == b"hello\n"
    c.close()


def test_long_stream_keeps_head_and_tail_of_the_byte_cap():
    c = Capture(10)  # 10 chars -> 44 bytes each side
    data = bytes(range(256)) * 40
    fill(c, data, chunk=1000)
    head, tail, total = c.lengths()
    assert (head, tail, total) == (44, 44, len(data))
    assert collected(c) == data[:44] + data[-44:]
    c.close()


def test_tail_across_the_ring_wrap():
    c = Capture(20000)  # byte cap 80,004 > the 64 KiB ring minimum: the ring is the cap
    data = os.urandom(300_000)
    fill(c, data, chunk=7000)
    head, tail, total = c.lengths()
    assert head == tail == 80_004 and total == 300_000
    assert collected(c) == data[:80_004] + data[-80_004:]
    c.close()


def test_head_has():
    c = Capture(100)
    fill(c, b"rstar-sandbox: child setup failed: x")
    assert c.head_has(b"child setup failed")
    assert not c.head_has(b"nothing")
    c.close()


def test_result_line_rules():
    def line(data):
        rl = ResultLine()
        r, w = os.pipe()
        os.write(w, data)
        os.close(w)
        while rl.read_from(r):
            pass
        os.close(r)
        try:
            return rl.complete(), rl.rc()
        finally:
            rl.close()

    assert line(b"rc 0\n") == (True, 0)
    assert line(b"rc 255\n") == (True, 255)
    assert line(b"rc 256\n") == (True, None)
    assert line(b"rc -1\n") == (True, None)
    assert line(b"rc 1") == (False, None)
    assert line(b"xx 1\n") == (True, None)
    assert line(b"rc 1x\n") == (True, None)
    assert line(b"A" * 500 + b"\n") == (False, None)  # only 64 bytes are kept: never a result


def test_pump_hard_cap_and_deadline():
    r, w = os.pipe()
    os.set_blocking(w, False)
    c = Capture(10)
    try:
        os.write(w, b"x" * 5000)
        assert pump([r], [c], time.monotonic() + 5, hard_bytes=1000) == "output_limit"
        assert pump([r], [Capture(10)], time.monotonic() + 0.05, hard_bytes=1 << 20) == "timeout"
        os.close(w)
        w = None
        assert pump([r], [Capture(10)], time.monotonic() + 5, hard_bytes=1 << 20) is None  # EOF
    finally:
        os.close(r)
        if w is not None:
            os.close(w)
        c.close()
