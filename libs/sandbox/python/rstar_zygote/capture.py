"""Reading a program's output while it runs: a soft cap (head + tail kept, `truncated` decided by the
host) and a hard cap (the call is killed, `output_limit`), so a flood never deadlocks a pipe nor grows
memory; and the session interpreter's result pipe. Bytes go straight into call mappings (callmem)."""
import fcntl
import os
import select
import time

from .callmem import call_map, write_all


class Capture:
    """A stream's first and last `byte_cap` bytes (4 per char of the cap, +4), read straight into
    anonymous mappings (never the heap: see callmem); counts every byte. The host decodes them and
    cuts the text to the char cap (libs/sandbox/src/output.text.ts)."""

    def __init__(self, cap_chars):
        self.byte_cap = max(0, cap_chars) * 4 + 4
        self.head = call_map(self.byte_cap)
        self.head_len = 0
        # The tail is a ring at least one pipe read long, so a flood costs no more reads than before.
        self.ring_size = max(self.byte_cap, 1 << 16)
        self.ring = call_map(self.ring_size)
        self.ring_pos = 0  # where the next byte goes
        self.ring_len = 0
        self.total = 0

    def read_from(self, fd):
        """One read(2) of `fd` into the buffers; the number of bytes read (0 at EOF)."""
        with memoryview(self.head) as hv, memoryview(self.ring) as rv:
            if self.head_len < self.byte_cap:
                parts = [hv[self.head_len:], rv]
            elif self.ring_pos:
                parts = [rv[self.ring_pos:], rv[: self.ring_pos]]
            else:
                parts = [rv]
            try:
                n = os.readv(fd, parts)
            finally:
                for v in parts:
                    v.release()
                del parts
        h = min(n, self.byte_cap - self.head_len)
        self.head_len += h
        if n > h:
            self.ring_pos = (self.ring_pos + n - h) % self.ring_size
            self.ring_len = min(self.ring_size, self.ring_len + n - h)
        self.total += n
        return n

    def tail_ranges(self):
        """(start, end) ranges of the ring holding the last <= byte_cap bytes after the head, in order."""
        k = min(self.ring_len, self.byte_cap)
        if not k:
            return []
        end = self.ring_pos or self.ring_size
        if end >= k:
            return [(end - k, end)]
        return [(self.ring_size - (k - end), self.ring_size), (0, end)]

    def lengths(self):
        """[head bytes, tail bytes, total bytes]: what the response line says of this stream."""
        return [self.head_len, sum(b - a for a, b in self.tail_ranges()), self.total]

    def write_to(self, fd):
        with memoryview(self.head) as hv, hv[: self.head_len] as part:
            write_all(fd, part)
        with memoryview(self.ring) as rv:
            for a, b in self.tail_ranges():
                with rv[a:b] as part:
                    write_all(fd, part)

    def head_has(self, needle):
        return self.head.find(needle, 0, self.head_len) != -1

    def close(self):
        self.head.close()
        self.ring.close()


class ResultLine:
    """The session interpreter's result pipe: its first line (at most 64 bytes kept, in a mapping: a
    cell's thread could write anything there) and nothing more."""

    def __init__(self):
        self.map = call_map(128)  # the line, then scratch space for whatever follows it
        self.len = 0
        self.total = 0  # not output: never counts toward the output caps

    def read_from(self, fd):
        with memoryview(self.map) as mv:
            room = mv[self.len: 64] if self.len < 64 else mv[64:]
            try:
                n = os.readv(fd, [room])
            finally:
                room.release()
        if self.len < 64:
            self.len += n
        return n

    def complete(self):
        return self.map.find(b"\n", 0, self.len) != -1

    def rc(self):
        """The exit code of a line `rc N` (0 <= N <= 255), else None (something else was written)."""
        end = self.map.find(b"\n", 0, self.len)
        if end < 4 or end > 6 or self.map.find(b"rc ", 0, 3) != 0:
            return None
        rc = 0
        for i in range(3, end):
            d = self.map[i] - 48
            if not 0 <= d <= 9:
                return None
            rc = rc * 10 + d
        return rc if rc <= 255 else None

    def close(self):
        self.map.close()


def pump(fds, caps, deadline, hard_bytes, stop_when=None, drain_s=0.05, exit_fd=None):
    """Read fds into captures until all EOF, `stop_when()` says the program ended (then a short drain),
    the deadline passes ('timeout') or the hard output cap is hit ('output_limit').

    `exit_fd` (a pidfd of the program) becomes readable when it exits: while it is watched the loop
    also waits for the exit itself and never polls, so the call ends the moment the program does
    (without it, `stop_when` is polled every 20 ms and the caller waits for the exit separately)."""
    open_fds = dict(zip(fds, caps))
    ended_at = None
    watch = exit_fd
    while open_fds or (watch is not None and ended_at is None):
        now = time.monotonic()
        if ended_at is None and stop_when and stop_when():
            ended_at = now
            watch = None
            if not open_fds:
                return None
        if ended_at is not None and now - ended_at > drain_s:
            return None
        if now >= deadline:
            return "timeout"
        wait = deadline - now
        if ended_at is not None:
            wait = min(wait, drain_s)
        elif stop_when and watch is None:
            wait = min(wait, 0.02)
        r, _, _ = select.select(list(open_fds) + ([watch] if watch is not None else []), [], [], wait)
        for fd in r:
            if fd == watch:
                watch = None  # exited: the loop head confirms it with `stop_when`, else falls back to polling
                continue
            try:
                n = open_fds[fd].read_from(fd)
            except OSError:
                n = 0
            if not n:
                del open_fds[fd]
                continue
            if sum(c.total for c in caps) > hard_bytes:
                return "output_limit"
    return None


def drain_nonblocking(pairs, hard_bytes):
    """Read what is left in each (fd, Capture) pipe without waiting: output written just before the end."""
    for fd, cap in pairs:
        fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        try:
            while cap.total <= hard_bytes:
                if not cap.read_from(fd):
                    break
        except OSError:
            pass
        fcntl.fcntl(fd, fcntl.F_SETFL, fl)
