"""Call memory: a call's bytes (program, stdin, output, /proc names) live only in anonymous mappings.

Every child is forked from the zygote, so whatever a call's program, stdin or output left in the
zygote's freed heap would be readable by every later call (ctypes, /proc/self/mem). Those bytes are
therefore only ever held in mappings made here, read into and written from in place, and unmapped when
the call ends: the zygote parses headers (limits, ids, lengths) but never a program, its input or its
output; the host decodes and cuts the output text.
"""
import mmap
import os


def call_map(size):
    """An anonymous mapping for call bytes: private (a fork never shares it: the default, MAP_SHARED,
    gave every later child one writable page with every earlier call) and left out of every fork
    (MADV_DONTFORK: a session interpreter started during a call gets none of the zygote's buffers)."""
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    if hasattr(mmap, "MADV_DONTFORK"):
        m.madvise(mmap.MADV_DONTFORK)
    return m


def read_exact(fd, view):
    """Fill the writable buffer `view` from `fd`; False at EOF before it is full."""
    got, n = 0, len(view)
    while got < n:
        with view[got:] as part:
            k = os.readv(fd, [part])
        if k == 0:
            return False
        got += k
    return True


def write_all(fd, view):
    """Write all of the bytes-like `view` to the blocking `fd`."""
    with memoryview(view) as mv:
        done = 0
        while done < len(mv):
            with mv[done:] as part:
                done += os.write(fd, part)


class CallBytes:
    """A request's program and stdin (UTF-8), read from the host straight into an anonymous mapping."""

    def __init__(self, code_len, input_len):
        self.code_len, self.input_len = code_len, input_len
        self.map = call_map(code_len + input_len) if code_len + input_len else None

    def fill(self, fd):
        if self.map is None:
            return True
        with memoryview(self.map) as mv, mv[: self.code_len + self.input_len] as part:
            return read_exact(fd, part)

    def write_code(self, fd):
        if self.code_len:
            with memoryview(self.map) as mv, mv[: self.code_len] as part:
                write_all(fd, part)

    def write_input(self, fd):
        if self.input_len:
            with memoryview(self.map) as mv, mv[self.code_len: self.code_len + self.input_len] as part:
                write_all(fd, part)

    def close(self):
        if self.map is not None:
            self.map.close()


NO_CALL_BYTES = CallBytes(0, 0)


def proc_stat_fields(path):
    """The fields of a /proc stat file after the command name (state, ppid, ..., as bytes). The name is
    what a program set (prctl PR_SET_NAME), call data like its output: it is read into a call mapping
    and never copied out of it. @raises OSError (gone), ValueError (no name's end)"""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    m = call_map(4096)
    try:
        with memoryview(m) as mv:
            n = os.readv(fd, [mv])
        end = m.rfind(b")", 0, n)
        if end < 0:
            raise ValueError(f"{path}: no command name")
        return m[end + 1: n].split()
    finally:
        os.close(fd)
        m.close()


def cpu_ms_of(pid):
    """User + system CPU ms of a live process (0.0 when it is gone)."""
    try:
        parts = proc_stat_fields(f"/proc/{pid}/stat")
        ticks = sum(int(x) for x in parts[11:15])
        return ticks * 1000.0 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0
