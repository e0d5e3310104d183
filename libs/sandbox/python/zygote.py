"""rstar sandbox zygote.

One long-lived interpreter that imports the heavy scientific stack once and then forks one child per
call (ARCHITECTURE §5, SANDBOX.md: a cold `python3` with numpy+sympy costs ~0.7 s, a fork ~1-5 ms).
It normally runs inside bubblewrap (no network, read-only system, private tmpfs, empty environment).

Protocol: the host writes requests on fd 0 and reads responses on the zygote's original fd 1; the
zygote handles one request at a time. The first line it writes is `{"ready": true, ...}`. A request is
8 hex digits (the header's length), a JSON header, then the payload it announces:
  {"op": "exec", "payload": [codeBytes, inputBytes], "timeoutMs", "memoryMb", "outputChars",
   "hardOutputBytes", "session", "known"}  + the program's and stdin's UTF-8 bytes
  {"op": "ping"} | {"op": "end_session", "session"}
A response is one JSON line: {"status", "exitCode", "signal", "wallMs", "cpuMs", "stderrNotes",
"sessionReset", "outputBytes", "streams": [[headBytes, tailBytes, totalBytes] for stdout, stderr]},
followed by those raw bytes (stdout head, stdout tail, stderr head, stderr tail). The zygote never
decodes a program, its stdin or its output (see CallBytes); a zygote error answers
{"status": "sandbox_error", "stdout": "", "stderr": <why>} with no streams.

Why the pieces are shaped this way:
- A call's child joins a cgroup leaf (pids + memory) *before* it drops to an unprivileged uid, so user
  code can neither leave its cgroup nor signal the zygote; a cgroup OOM kill is the clean signal for
  `memory_limit` (RLIMIT_AS is only the fallback where no cgroup is writable).
- The wall-clock limit is enforced here, outside the child, by SIGKILL of every process in the leaf
  (and the process group); the host adds a second, coarser backstop on the zygote itself.
- stdout/stderr are read while the program runs with a soft cap (head + tail kept, `truncated`) and a
  hard cap (kill, `output_limit`), so a flood never deadlocks a pipe nor grows memory.
- The zygote is a child subreaper, so orphans of a call (daemonised, new-session children) are reaped
  here and never become zombies.
"""
import ast
import builtins
import ctypes
import errno
import fcntl
import io
import json
import linecache
import mmap
import os
import resource
import select
import signal
import struct
import sys
import time
import traceback

CFG = json.loads(os.environ.pop("RSTAR_ZYGOTE_CONFIG", "{}"))
os.environ.pop("RSTAR_CG_PROCS", None)
WORK_ROOT = CFG.get("workRoot", "/tmp/rstar-zygote")
CALL_UID = CFG.get("uid")  # None: stay as we are (no privilege to drop)
# One uid per session slot, none shared with stateless calls or other slots: a session's leftover
# thread can then neither signal, read nor write what another call or session owns.
SESSION_UIDS = CFG.get("sessionUids") or []
CG_CALL = CFG.get("cgCall")  # {"memory": dir|None, "pids": dir|None, "version": 1|2}
CG_SESSIONS = CFG.get("cgSessions", [])  # one leaf per session slot
SESSION_CAP = int(CFG.get("sessionCap", 4))
SESSION_IDLE_S = float(CFG.get("sessionIdleS", 300))
WIPE_DIRS = CFG.get("wipeDirs", [])  # shared temp dirs wiped after each call (only inside a sandbox)
PIDS_MAX = int(CFG.get("pidsMax", 64))
FILE_MAX = int(CFG.get("fileMaxBytes", 64 << 20))
NOFILE = int(CFG.get("openFiles", 256))
CODE_NAME = "<code>"

# Pre-import the heavy stack once; children inherit it copy-on-write.
os.environ.setdefault("MPLBACKEND", "Agg")
import math, fractions, itertools, collections, functools, re, random, decimal, statistics  # noqa
import numpy  # noqa
import sympy  # noqa
import scipy  # noqa  (its submodules load lazily)
# Heavier extras (scipy.special/optimize/stats, matplotlib) stay lazy: every preloaded module makes each
# fork and exit slower (its mappings and page tables are copied and torn down per call). Preloading
# scipy.special alone added ~145 mappings and ~0.7 ms CPU per call (fork + child), measured both ways
# on this host, while 0 of the 6,877 real trajectory blocks use it (4 use scipy at all).
# MPLBACKEND=Agg keeps plots headless.
sys.set_int_max_str_digits(int(CFG.get("intMaxStrDigits", 0)))


def warm_up():
    """Run what tool calls typically run once, so sympy's lazily imported solvers/printers and caches
    are initialised here and inherited by every child (a cold `solve` in a fresh fork costs ~4x)."""
    x, y = sympy.symbols("x y")
    sympy.solve(x**2 - 5*x + 6, x)
    sympy.solve([x + y - 3, x - y - 1], [x, y])
    str(sympy.solve(x**2 + 1, x))
    sympy.simplify(sympy.sin(x)**2 + sympy.cos(x)**2)
    sympy.factor(x**3 - 1)
    sympy.expand((x + 1)**5)
    sympy.integrate(x**2, (x, 0, 1))
    sympy.limit(sympy.sin(x) / x, x, 0)
    sympy.diff(sympy.exp(x) * x, x)
    sympy.series(sympy.exp(x), x, 0, 3)
    sympy.nsimplify(0.5)
    sympy.N(sympy.pi, 20)
    str(sympy.Rational(1, 3) + sympy.sqrt(8))
    sympy.Matrix([[1, 2], [3, 4]]).det()
    sympy.latex(x**2)
    sympy.factorint(360)
    sympy.isprime(97)
    sympy.binomial(10, 3)
    a = numpy.arange(6.0).reshape(2, 3)
    repr(a @ a.T)
    numpy.linalg.solve(numpy.eye(2), numpy.ones(2))
    repr(numpy.float64(0.5))


try:
    warm_up()
except Exception:  # a warm-up failure only costs speed
    pass
import gc
gc.collect()


def immortalize_heap():
    """Mark every object alive now immortal (PEP 683, CPython >= 3.12), best effort.

    Why: after a fork, every `Py_INCREF`/`Py_DECREF` of an inherited object writes its refcount and
    so copies its 4 KiB page into the child; a sympy solve touches ~1,300 such pages (~4 ms of
    copy-on-write faults per call, measured here). Refcount operations skip immortal objects, so
    the child only copies pages it really writes (~750 for that solve). PEP 683 gives this pre-fork
    use (a forking server's shared heap) as its motivation. Objects alive now are the imported stack
    and its warmed caches, which live as long as the zygote anyway; the cost is that those the zygote
    would free later (an evicted cache entry) stay allocated. Returns the count, 0 where refcounts
    have no immortal bit (< 3.12) or the layout is not the one PEP 683 defines."""
    if sys.version_info < (3, 12) or sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return 0
    if hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled():
        return 0  # free-threaded builds keep refcounts elsewhere
    # The low 32 bits of ob_refcnt (little-endian: the first word) all set = immortal, on 64-bit builds.
    if sys.byteorder != "little":
        return 0
    immortal = 0xFFFFFFFF
    seen = set()
    n = 0
    for o in gc.get_objects():
        for x in (o, *gc.get_referents(o)):
            if id(x) in seen:
                continue
            seen.add(id(x))
            ctypes.c_uint32.from_address(id(x)).value = immortal
            n += 1
    return n


IMMORTALIZED = immortalize_heap() if CFG.get("immortalize", True) else 0
gc.freeze()  # children's collections skip inherited objects instead of copying their pages

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
MADV_COLLAPSE = 25  # Linux >= 6.1


def collapse_heap():
    """Back the warmed heap with transparent huge pages (MADV_COLLAPSE, synchronous), best effort.

    Why: a fork copies one page-table entry per resident 4 KiB page and the child's exit tears them
    all down again; with ~60 MiB of imported heap that was the largest per-call CPU cost (~2 ms each
    side, measured with perf: `copy_page_range`). A PMD-mapped 2 MiB page is copied as one entry.
    Copy-on-write still copies 4 KiB (the kernel splits a shared huge page on write), so what a call
    writes is charged to its own memory cgroup exactly as before. No MADV_HUGEPAGE is set, so pages
    the calls allocate stay ordinary 4 KiB pages. Returns the number of 2 MiB ranges collapsed."""
    if not sys.platform.startswith("linux"):
        return 0
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    huge = 1 << 21
    done = 0
    try:
        with open("/proc/self/maps") as f:
            maps = f.read().splitlines()
    except OSError:
        return 0
    for line in maps:
        parts = line.split()
        perms = parts[1]
        path = parts[5] if len(parts) > 5 else ""
        # Private writable anonymous memory only: the Python heap, pymalloc arenas, numpy buffers.
        if perms[:2] != "rw" or perms[3] != "p" or (path and path != "[heap]"):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        start = (lo + huge - 1) & ~(huge - 1)
        for addr in range(start, hi & ~(huge - 1), huge):
            if libc.madvise(addr, huge, MADV_COLLAPSE) == 0:
                done += 1
            elif ctypes.get_errno() in (errno.ENOSYS,):
                return done
    return done


HUGE_RANGES = collapse_heap() if CFG.get("hugePages", True) else 0

# Keep the protocol channel private: fd 1/2 of children are their own pipes.
PROTO_OUT_FD = os.dup(1)
PROTO_IN_FD = os.dup(0)
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0)
os.dup2(2, 1)
os.makedirs(WORK_ROOT, exist_ok=True)
# Traversable, not listable: a call finds no other call's work dir or stdin file by name.
os.chmod(WORK_ROOT, 0o711)


def send(obj, streams=()):
    """One response: its JSON line, then the raw bytes of `streams` (Captures, stdout first), whose
    lengths the line gives under "streams" (PROTOCOL in the module doc)."""
    if streams:
        obj["streams"] = [c.lengths() for c in streams]
    write_all(PROTO_OUT_FD, (json.dumps(obj) + "\n").encode())
    for c in streams:
        c.write_to(PROTO_OUT_FD)


# ---------------------------------------------------------------- call bytes off the heap
# Every child is forked from this process, so whatever a call's program, stdin or output left in the
# zygote's freed heap would be readable by every later call (ctypes, /proc/self/mem). Those bytes are
# therefore only ever held in anonymous mappings, read into and written from in place, and unmapped when
# the call ends: the zygote parses headers (limits, ids, lengths) but never a program, its input or its
# output; the host decodes and cuts the output text.
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


def read_request():
    """The next request from the host: (header dict, CallBytes), or None at EOF. Framing: 8 hex digits
    giving the header's length, the header (JSON; `"payload": [codeBytes, inputBytes]` when the request
    carries a program), then the payload bytes."""
    size = bytearray(8)
    if not read_exact(PROTO_IN_FD, memoryview(size)):
        return None
    header = bytearray(int(size, 16))
    if not read_exact(PROTO_IN_FD, memoryview(header)):
        return None
    req = json.loads(header)
    code_len, input_len = req.get("payload") or (0, 0)
    if not code_len and not input_len:
        return req, NO_CALL_BYTES
    body = CallBytes(int(code_len), int(input_len))
    if not body.fill(PROTO_IN_FD):
        body.close()
        return None
    return req, body


# ---------------------------------------------------------------- cgroups
def cg_write(d, name, value):
    with open(os.path.join(d, name), "w") as f:
        f.write(str(value))


CG_READ_FDS = {}  # path -> open fd: every call reads the same few cgroup files several times


def cg_read(d, name):
    """Current text of a cgroup file. Counters' fds stay open and are re-read from offset 0 (cgroupfs
    regenerates their text on each read at 0): opening a kernfs file costs more than reading it.
    Not cgroup.procs: v1 caches its pid list per open file, so it is opened afresh each time."""
    path = os.path.join(d, name)
    if name == "cgroup.procs":
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""
    fd = CG_READ_FDS.get(path)
    try:
        if fd is None:
            fd = CG_READ_FDS[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        return os.pread(fd, 65536, 0).decode()  # counter files are a few lines
    except OSError:
        # Removed under us: forget the fd (the next read opens the path again).
        CG_READ_FDS.pop(path, None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        return ""


def oom_count(leaf):
    if not leaf or not leaf.get("memory"):
        return 0
    d = leaf["memory"]
    text = cg_read(d, "memory.oom_control") if leaf.get("version") == 1 else cg_read(d, "memory.events")
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if k == "oom_kill":
            return int(v)
    return 0


def pids_refusals(leaf):
    """How often the leaf's pids controller has refused a fork/clone/thread (`max` in pids.events,
    same line in v1 and v2); cumulative, so a call compares its value before and after."""
    if not leaf or not leaf.get("pids"):
        return 0
    for line in cg_read(leaf["pids"], "pids.events").splitlines():
        k, _, v = line.partition(" ")
        if k == "max":
            return int(v)
    return 0


def task_limit_note():
    """The fixed line appended to stderr when a call reached its task limit (see README: the outcome of
    process-count exhaustion), so the reason for the program's EAGAIN is never hidden. Fixed text, no
    counts: the result of a call must not depend on timing."""
    return (f"rstar-sandbox: task limit reached: a call may run at most {PIDS_MAX} tasks (processes, threads "
            "and unreaped zombies together); creating more failed with EAGAIN\n")


def leaf_prepare(leaf, memory_mb):
    """Set the leaf's limits for the next call (memory in MiB of new pages, pids incl. threads)."""
    if not leaf:
        return
    key = (PIDS_MAX, int(memory_mb))
    if leaf.get("_applied") == key:
        return  # limits unchanged since the last call in this leaf: skip the cgroupfs writes
    leaf["_applied"] = key
    v = leaf.get("version")
    if leaf.get("pids"):
        cg_write(leaf["pids"], "pids.max", PIDS_MAX)
    if leaf.get("memory"):
        b = int(memory_mb) << 20
        if v == 1:
            # memsw must stay >= limit: raise order depends on direction.
            for name in ("memory.memsw.limit_in_bytes", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
                try:
                    cg_write(leaf["memory"], name, b)
                except OSError:
                    pass
        else:
            cg_write(leaf["memory"], "memory.max", b)
            try:
                cg_write(leaf["memory"], "memory.swap.max", 0)
            except OSError:
                pass


def leaf_pids(leaf):
    pids = set()
    if leaf:
        for key in ("pids", "memory"):
            d = leaf.get(key)
            if d:
                for line in cg_read(d, "cgroup.procs").split():
                    pids.add(int(line))
    return pids


def reap_all():
    """Reap every exited child (we are the subreaper); returns {pid: status} for the ones reaped."""
    reaped = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        reaped[pid] = status
    return reaped


def own_children():
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as f:
            return {int(p) for p in f.read().split()}
    except OSError:
        return set()


def reap_strays(timeout_s=2.0):
    """Wait until every child except live sessions is reaped: processes a call left behind are
    re-parented to us (subreaper) and must not linger as zombies after the call returns."""
    deadline = time.monotonic() + timeout_s
    while True:
        reap_all()
        keep = {s["pid"] for s in SESSIONS.values()}
        if not (own_children() - keep) or time.monotonic() > deadline:
            return
        time.sleep(0.002)


def kill_tree(leaf, pgid=None, keep=frozenset()):
    """SIGKILL everything of a call: its cgroup leaf (catches new-session children) and its group;
    `keep` spares pids (a session's interpreter when only its cell's leftovers go)."""
    if pgid:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 2.0
    blocked = False
    while leaf:
        pids = leaf_pids(leaf) - keep
        if not pids or time.monotonic() > deadline:
            break
        if not blocked and leaf.get("pids"):
            # A fork bomb refills every slot a kill frees: forbid new tasks first, so the kill loop
            # converges. leaf_prepare restores the limit before the leaf's next call.
            blocked = True
            try:
                cg_write(leaf["pids"], "pids.max", 0)
            except OSError:
                pass
            leaf["_applied"] = None
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        reap_all()
        time.sleep(0.001)


# ---------------------------------------------------------------- child side
CG_PROCS_FDS = {}  # cgroup.procs path -> fd the zygote keeps open for its children to write to


def procs_fds(leaf):
    """Parent side, before a fork: open (once) the leaf's cgroup.procs files, so the child joins
    with one write each instead of an open, a write and a close."""
    fds = []
    if leaf:
        for key in ("pids", "memory"):
            if leaf.get(key):
                path = leaf[key] + "/cgroup.procs"
                if path not in CG_PROCS_FDS:
                    CG_PROCS_FDS[path] = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
                fds.append(CG_PROCS_FDS[path])
    return fds


CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000


def new_namespaces(flags):
    """Child side, as root: private namespaces for what outlives a process. IPC (System V shared
    memory, message queues, semaphores and POSIX message queues persist after their creator exits:
    without this a call could leave data, or pinned memory, for the next one); for a session also the
    network (its sockets stay bound while it is stopped between cells: others could connect to them),
    with its own loopback up. False where unshare is not permitted (no CAP_SYS_ADMIN)."""
    if libc.unshare(flags) != 0:
        return False
    if flags & CLONE_NEWNET:
        import socket
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sk:
            ifr = fcntl.ioctl(sk, 0x8913, struct.pack("16sH22x", b"lo", 0))  # SIOCGIFFLAGS
            flags_lo = struct.unpack("16sH22x", ifr)[1]
            fcntl.ioctl(sk, 0x8914, struct.pack("16sH22x", b"lo", flags_lo | 0x1))  # SIOCSIFFLAGS: IFF_UP
    return True


def probe_namespaces():
    """Whether children get private IPC and network namespaces here (reported in the ready line)."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if new_namespaces(CLONE_NEWIPC | CLONE_NEWNET) else 1)
        except BaseException:
            os._exit(1)
    _, st = os.waitpid(pid, 0)
    return os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0


def join_cgroup(fds):
    """Child side, first thing after the fork: move into the call's leaf (fds from `procs_fds`).
    Raw fd writes: every Python object a fresh child touches costs it a copy-on-write page fault."""
    for fd in fds:
        os.write(fd, b"0")  # "0": the writing process itself
    os.setpgid(0, 0)


def isolate_fds(out_w, err_w, keep):
    """Child: stdout/stderr onto the pipes, `keep` fds moved to 3.., every other inherited fd closed
    (so a program can never reach the protocol channel or another session's pipes)."""
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    # Park the kept fds above anything in use first, so moving them down never clobbers one another.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 4096) for fd in keep]
    moved = []
    for i, fd in enumerate(high):
        os.dup2(fd, 3 + i)
        moved.append(3 + i)
    os.closerange(3 + len(keep), 1 << 16)
    return moved


def drop_privileges(workdir, uid):
    """In a fresh child (the cgroup was joined right after fork): the limits every call shares, then
    leave root for `uid` (None: no privilege to drop), in `workdir`."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_MAX, FILE_MAX))
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
    os.chdir(workdir)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    # Die with the zygote whatever happens to it (after the uid change, which clears this setting).
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.environ["HOME"] = workdir
    os.environ["TMPDIR"] = workdir


def call_limits(leaf, memory_mb, timeout_ms):
    """The request's own limits, set once its program is known (lowering a limit needs no privilege)."""
    cpu_s = max(1, int(timeout_ms / 1000) + 1)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    if not (leaf and leaf.get("memory")):
        # Fallback without a memory cgroup: cap address space above what the zygote already maps.
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * resource.getpagesize()
        cap = vm + (int(memory_mb) << 20)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def join_and_drop(leaf, memory_mb, timeout_ms, workdir, uid):
    """A session interpreter's whole setup: privileges dropped and its limits set at once."""
    drop_privileges(workdir, uid)
    call_limits(leaf, memory_mb, timeout_ms)


def redirect_stdin(path):
    """Point fd 0 (under the already built `sys.stdin`, which has read nothing yet) at `path`."""
    fd = os.open(path, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)


def setup_stdio(stdin_path):
    fd = os.open(stdin_path, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    # Unbuffered, write-through text streams: output printed before a crash or a kill is kept.
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)


def format_exception(exc):
    """Type, line, message and the offending line, with the runner's own frames cut off."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != CODE_NAME:
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename == CODE_NAME:
        tb = None
    return "".join(traceback.format_exception(type(exc), exc, tb))


def run_cell(code, ns):
    """Execute `code` in namespace `ns`; echo the repr of a final bare expression. Returns exit code."""
    linecache.cache[CODE_NAME] = (len(code), None, code.splitlines(True), CODE_NAME)
    try:
        tree = ast.parse(code, CODE_NAME, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, CODE_NAME, "exec"), ns)
        if last is not None:
            value = eval(compile(last, CODE_NAME, "eval"), ns)
            if value is not None:
                print(repr(value))
        return 0
    except SystemExit as e:
        c = e.code
        if c is None:
            return 0
        if isinstance(c, int):
            return c & 0xFF
        print(c, file=sys.stderr)
        return 1
    except MemoryError:
        sys.stderr.write("MemoryError: memory limit exceeded\n")
        return 1
    except BaseException as e:  # noqa: B036 - everything the program raises is its result
        try:
            sys.stderr.write(format_exception(e))
        except BaseException:
            sys.stderr.write(f"{type(e).__name__}\n")
        return 1


def fresh_namespace():
    """A real `__main__` module for the program (children only), so pickling functions it defines
    (multiprocessing, concurrent.futures) finds them by name."""
    import types
    mod = types.ModuleType("__main__")
    mod.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = mod
    return mod.__dict__


# ---------------------------------------------------------------- output collection
class Capture:
    """A stream's first and last `byte_cap` bytes (4 per char of the cap, +4), read straight into
    anonymous mappings (never the heap: see CallBytes); counts every byte. The host decodes them and
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
        self.total = 0

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


def signal_name(n):
    """SIGSEGV, SIGRTMIN+1, ...: a real-time signal has no `signal.Signals` member (a program killing
    itself with signal 35 made the lookup raise, and its session's files were then never wiped)."""
    try:
        return signal.Signals(n).name
    except ValueError:
        if signal.SIGRTMIN < n <= signal.SIGRTMAX:
            return f"SIGRTMIN+{n - signal.SIGRTMIN}"
        return f"SIG{n}"


def classify(killed_for, exit_status, oom_before, leaf):
    """Map how the child ended to (status, exitCode, signal). A `runtime_error` whose stderr ends in a
    MemoryError line is made `memory_limit` by the host, which has the text (see CallBytes)."""
    code, sig = None, None
    if exit_status is not None:
        if os.WIFSIGNALED(exit_status):
            sig = signal_name(os.WTERMSIG(exit_status))
        elif os.WIFEXITED(exit_status):
            code = os.WEXITSTATUS(exit_status)
    if killed_for:
        return killed_for, code, sig or "SIGKILL"
    if oom_count(leaf) > oom_before:
        return "memory_limit", code, sig
    if sig == "SIGXCPU":
        return "timeout", code, sig
    if sig in ("SIGKILL", "SIGTERM"):
        return "killed", code, sig
    if sig is not None:
        return "runtime_error", code, sig
    if code == 0:
        return "ok", code, sig
    return "runtime_error", code, sig


def new_workdir(uid):
    """A private work dir for one call or session, owned by `uid` (0700)."""
    d = os.path.join(WORK_ROOT, f"c{time.monotonic_ns()}")
    os.mkdir(d, 0o700)
    if uid is not None:
        os.chown(d, uid, uid)
    return d


WIPE_FAILED = []  # paths a wipe could not remove: the zygote then ends after answering (see main)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path):
    """Remove the directory `path` and everything in it: depth first, one directory fd at a time,
    every step relative to a directory fd (never follows a planted symlink, no path length limit)
    and without recursion (a program can nest directories deeper than Python's recursion limit;
    the standard library's rmtree raised RecursionError there). Runs only once the call's processes are dead.
    Records what it could not remove in WIPE_FAILED."""
    below = []  # names from `path` down to the directory `fd` is open on
    try:
        fd = os.open(path, DIR_FLAGS)
    except OSError:
        try:
            os.unlink(path)  # not a directory (or a symlink to one): the entry itself goes
        except FileNotFoundError:
            pass
        except OSError:
            WIPE_FAILED.append(path)
        return
    try:
        while True:
            sub = None
            with os.scandir(fd) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        sub = e.name
                        break
                    try:
                        os.unlink(e.name, dir_fd=fd)
                    except FileNotFoundError:
                        pass
            if sub is not None:
                try:
                    nfd = os.open(sub, DIR_FLAGS, dir_fd=fd)
                except PermissionError:
                    os.chmod(sub, 0o700, dir_fd=fd)  # a mode-000 dir the call left: root may reopen it
                    nfd = os.open(sub, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nfd
                below.append(sub)
                continue
            if not below:
                break
            up = os.open("..", DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = up
            os.rmdir(below.pop(), dir_fd=fd)
    except OSError:
        WIPE_FAILED.append(path)
        return
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        WIPE_FAILED.append(path)


def in_wipe_helper(fn, *args):
    """Run a wipe in a short-lived forked child. Listing a directory makes each name a Python string,
    and a call's file names are call data: in the zygote they would stay in freed memory that every
    later child inherits (a review found 2,183 of 3,000 names a call created in the next call's
    memory). A child that cannot be forked, or whose wipe fails, marks WIPE_FAILED: the zygote is
    then replaced, with a fresh tmpfs."""
    try:
        pid = os.fork()
    except OSError:
        WIPE_FAILED.append("(no process for the wipe)")
        return
    if pid == 0:
        try:
            fn(*args)
            if WIPE_FAILED:
                # A count, not the names: they are the call's data.
                os.write(2, f"rstar-sandbox: the wipe could not remove {len(WIPE_FAILED)} entries\n".encode())
                os._exit(3)
            os._exit(0)
        except BaseException:
            os._exit(4)
    try:
        _, st = os.waitpid(pid, 0)  # EINTR is retried by Python (PEP 475)
    except ChildProcessError:  # reaped elsewhere: cannot tell how it ended
        st = None
    if st is None or not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0):
        WIPE_FAILED.append("(what the wipe reported above)")


def wipe(path):
    try:
        os.rmdir(path)  # the common case: the program wrote no files (one syscall)
    except FileNotFoundError:
        pass
    except OSError:
        in_wipe_helper(remove_tree, path)


def unescape_mountinfo(field):
    # /proc/self/mountinfo writes space, tab, newline and backslash as octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def wipe_keep():
    """What `wipe_shared` must leave alone inside the shared temp dirs, fixed once at start:
    {path: "skip"} for mount points there (bwrap binds a Python install or checkout that lives under
    /tmp back on top of the private tmpfs) and for WORK_ROOT, {path: "descend"} for the directories
    that lead to them. Why: wiping a read-only bind walked the whole install on every call (~100 ms
    of CPU per call for a venv under /tmp, measured), and would empty a writable one."""
    keep = {}
    roots = [os.path.abspath(d) for d in WIPE_DIRS]
    try:
        with open("/proc/self/mountinfo") as f:
            points = [unescape_mountinfo(line.split()[4]) for line in f]
    except OSError:
        points = []
    for target in [*points, os.path.abspath(WORK_ROOT)]:
        for root in roots:
            if not target.startswith(root + os.sep):
                continue
            keep[target] = "skip"
            parent = os.path.dirname(target)
            while parent != root and parent.startswith(root + os.sep):
                keep.setdefault(parent, "descend")
                parent = os.path.dirname(parent)
    return keep


WIPE_KEEP = wipe_keep()


def wipe_tree(d):
    """Remove everything in `d` except what WIPE_KEEP protects (never crosses into a mount)."""
    try:
        entries = os.listdir(d)
    except FileNotFoundError:
        return
    except OSError:
        WIPE_FAILED.append(d)
        return
    for name in entries:
        p = os.path.join(d, name)
        kind = WIPE_KEEP.get(p)
        if kind == "skip" or p in SESSION_DIRS:
            continue
        if kind == "descend" and os.path.isdir(p) and not os.path.islink(p):
            wipe_tree(p)
            continue
        remove_tree(p)


# The directories a call can add entries to without WIPE_KEEP's protection: the shared temp dirs and
# those leading to a kept mount point (all root-owned: a call cannot set their times). Adding or removing
# an entry changes a directory's mtime and ctime and, on tmpfs, its size (20 bytes an entry), so the
# same stat as after the last wipe says, without listing anything, that the call left nothing there.
# The size also covers an entry made within one timestamp tick of the wipe (coarse before Linux 6.13).
WIPE_WATCH = [os.path.abspath(d) for d in WIPE_DIRS] + [p for p, k in WIPE_KEEP.items() if k == "descend"]


def watched_stats():
    out = []
    for d in WIPE_WATCH:
        try:
            st = os.stat(d)
            out.append((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_nlink, st.st_ino))
        except OSError:
            out.append(None)
    return out


WIPED_STATS = watched_stats()


def wipe_shared():
    """After every call: empty the shared temp dirs (/tmp, /var/tmp, /dev/shm) so no file of one call
    is seen by the next. Nothing to list when no watched directory changed (the common case); else the
    listing happens in a wipe helper (see in_wipe_helper)."""
    global WIPED_STATS
    if watched_stats() == WIPED_STATS:
        return
    in_wipe_helper(lambda: [wipe_tree(os.path.abspath(d)) for d in WIPE_DIRS])
    WIPED_STATS = watched_stats()


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
    try:
        parts = proc_stat_fields(f"/proc/{pid}/stat")
        ticks = sum(int(x) for x in parts[11:15])
        return ticks * 1000.0 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


# ---------------------------------------------------------------- stateless call
SPARE = None  # a child forked ahead of time, waiting for its program: the fork is off the latency path


def forget_zygote_state():
    """In a fresh child, before any program runs: drop what the zygote knows of other calls and
    sessions (ids, pids, work dirs), which the child inherited and has no use for. (The previous
    request's own locals are gone before the fork: see `main`.)"""
    SESSIONS.clear()
    SESSION_DIRS.clear()
    RESET_IDS.clear()


def read_job(fd):
    """The spare child's wait: the job the zygote writes on `fd` (then closes): (header, program), or
    None at EOF with nothing (the zygote is shutting down). The header is a JSON line, the program's
    UTF-8 bytes follow it."""
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    if not chunks:
        return None
    header, _, code = b"".join(chunks).partition(b"\n")
    return json.loads(header), code.decode("utf-8")


def prefork():
    """Fork the next call's child now, with its own work dir: it joins the call leaf, sets up stdio and a
    fresh `__main__`, and blocks until it gets its request. All of that is off the next call's latency
    path; what depends on the request (stdin, dropping root for the call uid, CPU and memory limits)
    comes after."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    go_r, go_w = os.pipe()
    workdir = None
    try:
        join_fds = procs_fds(CG_CALL)
        workdir = new_workdir(CALL_UID)
        pid = os.fork()
    except OSError:
        for fd in (out_r, out_w, err_r, err_w, go_r, go_w):
            os.close(fd)
        if workdir:
            wipe(workdir)
        raise
    if pid == 0:
        try:
            join_cgroup(join_fds)
            new_namespaces(CLONE_NEWIPC)
            (go,) = isolate_fds(out_w, err_w, [go_r])
            forget_zygote_state()
            setup_stdio(os.devnull)
            ns = fresh_namespace()
            job = read_job(go)
            if job is None:
                os._exit(0)
            limits, code = job
            if limits["stdin"] != os.devnull:
                redirect_stdin(limits["stdin"])  # as root: the file is 0600, no call uid can read it
            # Root until the job is here: a waiting spare must not be a process of the call uid.
            drop_privileges(workdir, CALL_UID)
            call_limits(CG_CALL, limits["memoryMb"], limits["timeoutMs"])
            rc = run_cell(code, ns)
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:
                pass
            os._exit(rc)
        except BaseException as e:  # setup failure: report it as the sandbox's error
            try:
                os.write(2, f"rstar-sandbox: child setup failed: {e!r}\n".encode())
            finally:
                os._exit(125)
    os.close(out_w)
    os.close(err_w)
    os.close(go_r)
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # Linux < 5.3 or no pidfd in this build: poll instead
        pidfd = None
    return {"pid": pid, "out_r": out_r, "err_r": err_r, "go_w": go_w, "pidfd": pidfd, "workdir": workdir}


def write_stdin(body, uid):
    """The call's stdin (from its CallBytes) as a file in WORK_ROOT, readable only by `uid` (None: root,
    for a child that opens it before dropping privileges). Returns its path."""
    path = os.path.join(WORK_ROOT, f"stdin-{time.monotonic_ns()}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        if uid is not None:
            os.fchown(fd, uid, uid)
        body.write_input(fd)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    return path


def discard_spare(spare):
    """A spare child whose call failed in the zygote: end it and whatever it started, release the fds
    still open (each is popped from `spare` when closed, so none is closed twice) and its work dir."""
    for k in ("go_w", "out_r", "err_r", "pidfd"):
        fd = spare.pop(k, None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    try:
        os.kill(spare["pid"], signal.SIGKILL)
    except OSError:
        pass
    kill_tree(CG_CALL, spare["pid"])
    try:
        os.waitpid(spare["pid"], 0)
    except ChildProcessError:
        pass
    reap_strays()
    wipe(spare["workdir"])
    wipe_shared()


def exec_stateless(req, body):
    timeout_s = req["timeoutMs"] / 1000.0
    leaf = CG_CALL
    leaf_prepare(leaf, req["memoryMb"])
    oom_before = oom_count(leaf)
    refused_before = pids_refusals(leaf)
    # Before the spare is taken: a failure here leaves the spare ready for the next call.
    stdin_path = write_stdin(body, None) if body.input_len else None
    global SPARE
    try:
        spare = SPARE or prefork()
        SPARE = None
        try:
            return run_spare(req, body, spare, stdin_path, leaf, oom_before, refused_before, timeout_s)
        except BaseException:
            discard_spare(spare)
            raise
    finally:
        if stdin_path:
            try:
                os.unlink(stdin_path)
            except OSError:
                pass


def run_spare(req, body, spare, stdin_path, leaf, oom_before, refused_before, timeout_s):
    """Give the spare child its job, collect its output and ending (exec_stateless's main part); the
    output mappings are the response's on success, unmapped here on failure."""
    outc, errc = Capture(req["outputChars"]), Capture(req["outputChars"])
    try:
        return collect_spare(req, body, spare, stdin_path, leaf, oom_before, refused_before, timeout_s, outc, errc)
    except BaseException:
        outc.close()
        errc.close()
        raise


def collect_spare(req, body, spare, stdin_path, leaf, oom_before, refused_before, timeout_s, outc, errc):
    pid, out_r, err_r, workdir = spare["pid"], spare["out_r"], spare["err_r"], spare["workdir"]
    start = time.monotonic()
    try:
        limits = {"memoryMb": req["memoryMb"], "timeoutMs": req["timeoutMs"], "stdin": stdin_path or os.devnull}
        write_all(spare["go_w"], (json.dumps(limits) + "\n").encode())
        body.write_code(spare["go_w"])
    except OSError:
        pass
    os.close(spare.pop("go_w"))
    status_holder = {}

    def exited():
        if "st" in status_holder:
            return True
        try:
            p, st, ru = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            status_holder["st"] = None
            return True
        if p == pid:
            status_holder["st"] = st
            status_holder["ru"] = ru
            return True
        return False

    pidfd = spare.pop("pidfd")
    try:
        killed_for = pump([out_r, err_r], [outc, errc], start + timeout_s, req["hardOutputBytes"], exited,
                          exit_fd=pidfd)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    while not killed_for and not exited():
        # The program closed its output but still runs: wait for it up to the limit.
        if time.monotonic() >= start + timeout_s:
            killed_for = "timeout"
            break
        time.sleep(0.002)
    # Read before any kill: kill_tree forbids new tasks, and a leftover's refused fork is not the call's.
    refused = pids_refusals(leaf) > refused_before
    if killed_for or not exited():
        # Either the program overran, or it closed its pipes but keeps running: the call is over.
        kill_tree(leaf, pid)
        if "st" not in status_holder:
            try:
                _, st, ru = os.wait4(pid, 0)
                status_holder["st"], status_holder["ru"] = st, ru
            except ChildProcessError:
                status_holder["st"] = None
        if not killed_for and time.monotonic() >= start + timeout_s:
            killed_for = "timeout"
    wall_ms = (time.monotonic() - start) * 1000.0
    # Whatever the main process left behind (daemons, new sessions) dies with the call.
    kill_tree(leaf, pid)
    # A last non-blocking drain: output written just before the end is kept.
    drain_nonblocking([(out_r, outc), (err_r, errc)], req["hardOutputBytes"])
    os.close(spare.pop("out_r"))
    os.close(spare.pop("err_r"))
    reap_strays()
    ru = status_holder.get("ru")
    cpu_ms = (ru.ru_utime + ru.ru_stime) * 1000.0 if ru else 0.0
    st = status_holder.get("st")
    status, code, sig = classify(killed_for, st, oom_before, leaf)
    if st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 125 and errc.head_has(b"rstar-sandbox: child setup failed"):
        status = "sandbox_error"
    wipe(workdir)
    wipe_shared()
    return {"status": status, "exitCode": code, "signal": sig, "wallMs": round(wall_ms, 3),
            "cpuMs": round(cpu_ms, 3), "stderrNotes": [task_limit_note()] if refused else [],
            "sessionReset": False, "outputBytes": outc.total + errc.total, "_streams": (outc, errc)}


# ---------------------------------------------------------------- sessions
SESSIONS = {}  # id -> dict(pid, ctl_w, res_r, out_r, err_r, leaf, workdir, last)
SESSION_DIRS = set()
RESET_IDS = collections.OrderedDict()  # sessions whose interpreter was lost (next call says so)


def mark_reset(sid):
    RESET_IDS[sid] = True
    while len(RESET_IDS) > 4096:
        RESET_IDS.popitem(last=False)


def reap_children(wait_s):
    """Reap every exited child of this process; wait up to `wait_s` for children that are still dying
    (just SIGKILLed). Returns how many were reaped."""
    n = 0
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return n
        if pid:
            n += 1
        elif time.monotonic() > deadline:
            return n
        else:
            time.sleep(0.002)


def session_reap(s):
    """Have a session interpreter reap the children its cell left (killed by the caller): otherwise they
    stay zombies until the session ends, holding slots of its task limit. Best effort, 1 s at most."""
    try:
        os.write(s["ctl_w"], b'{"reap": true}\n')
    except OSError:
        return
    line = ResultLine()
    try:
        deadline = time.monotonic() + 1.0
        while not line.complete() and time.monotonic() < deadline:
            r, _, _ = select.select([s["res_r"]], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                break
            try:
                if not line.read_from(s["res_r"]):
                    break
            except BlockingIOError:
                continue
    finally:
        line.close()


def session_loop(ctl_r, res_w, workdir):
    """The session interpreter: one cell per control line (a JSON header, then `codeBytes` of program),
    result `rc N` on its own pipe (never in stdout, so no program output can forge the end marker)."""
    ns = fresh_namespace()
    me = os.getpid()
    ctl = os.fdopen(ctl_r, "rb")
    while True:
        line = ctl.readline()
        if not line:
            os._exit(0)
        cell = json.loads(line)
        if cell.get("reap"):
            # The zygote killed what the last cell left running; only their parent can reap them.
            os.write(res_w, f"reaped {reap_children(0.5)}\n".encode())
            continue
        code = ctl.read(cell["codeBytes"]).decode("utf-8")
        setup_stdio(cell["stdinPath"])
        os.chdir(workdir)
        rc = run_cell(code, ns)
        if os.getpid() != me:
            # A process the cell forked returned here (e.g. its code raised): it is not the session.
            os._exit(rc)
        os.write(res_w, f"rc {rc}\n".encode())


def end_session(sid, reset):
    s = SESSIONS.pop(sid, None)
    if not s:
        return
    kill_tree(s["leaf"], s["pid"])
    for k in ("ctl_w", "res_r", "out_r", "err_r"):
        try:
            os.close(s[k])
        except OSError:
            pass
    try:
        os.waitpid(s["pid"], 0)
    except ChildProcessError:
        pass
    reap_all()
    SESSION_DIRS.discard(s["workdir"])
    wipe(s["workdir"])
    if reset:
        mark_reset(sid)


def expire_sessions():
    now = time.monotonic()
    for sid in [k for k, s in SESSIONS.items() if now - s["last"] > SESSION_IDLE_S]:
        end_session(sid, True)


def free_slot():
    """The lowest session slot no live session holds (there are SESSION_CAP: the caller evicts first).
    A slot is a cgroup leaf (where cgroups exist) and a uid of its own (where uids can be dropped)."""
    used = {s["slot"] for s in SESSIONS.values()}
    return next(k for k in range(SESSION_CAP) if k not in used)


def session_uid(slot):
    return SESSION_UIDS[slot] if slot < len(SESSION_UIDS) else CALL_UID


def freeze(s, frozen):
    """Stop a session interpreter between its cells (returning once all its threads are stopped, at
    most 0.5 s), continue it for the next: a thread its cell left running must not act while other
    calls of this zygote run (they share /tmp), nor spy on them."""
    pid = s["pid"]
    try:
        os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)
    except OSError:
        return
    deadline = time.monotonic() + 0.5
    while frozen and time.monotonic() < deadline:
        try:
            states = []
            for t in os.listdir(f"/proc/{pid}/task"):
                states.append(proc_stat_fields(f"/proc/{pid}/task/{t}/stat")[0])
        except (OSError, ValueError, IndexError):
            return  # gone
        if all(st in (b"T", b"t", b"Z", b"X") for st in states):
            return
        time.sleep(0.0005)


def start_session(sid, req):
    if len(SESSIONS) >= SESSION_CAP:
        lru = min(SESSIONS, key=lambda k: SESSIONS[k]["last"])
        end_session(lru, True)
    slot = free_slot()
    leaf = CG_SESSIONS[slot] if slot < len(CG_SESSIONS) else None
    uid = session_uid(slot)
    leaf_prepare(leaf, req["memoryMb"])
    workdir = new_workdir(uid)
    SESSION_DIRS.add(workdir)
    ctl_r, ctl_w = os.pipe()
    res_r, res_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    join_fds = procs_fds(leaf)
    pid = os.fork()
    if pid == 0:
        try:
            join_cgroup(join_fds)
            new_namespaces(CLONE_NEWIPC | CLONE_NEWNET)
            ctl_r, res_w = isolate_fds(out_w, err_w, [ctl_r, res_w])
            # Sessions get a generous CPU rlimit: their wall limit is enforced per cell from here.
            forget_zygote_state()
            join_and_drop(leaf, req["memoryMb"], 24 * 3600 * 1000, workdir, uid)
            session_loop(ctl_r, res_w, workdir)
        except BaseException as e:
            try:
                os.write(2, f"rstar-sandbox: session setup failed: {e!r}\n".encode())
            finally:
                os._exit(125)
    for fd in (ctl_r, res_w, out_w, err_w):
        os.close(fd)
    s = {"pid": pid, "ctl_w": ctl_w, "res_r": res_r, "out_r": out_r, "err_r": err_r, "leaf": leaf,
         "slot": slot, "uid": uid, "workdir": workdir, "last": time.monotonic()}
    SESSIONS[sid] = s
    return s


def exec_session(req, body):
    """Run one cell in the request's session (started on first use). Any failure of the zygote's own
    handling ends the session (reset), so nothing of it keeps running unwatched, and wipes what the
    cell left in the shared temp dirs."""
    sid = req["session"]
    outc, errc, res = Capture(req["outputChars"]), Capture(req["outputChars"]), ResultLine()
    try:
        resp = run_cell_in_session(req, body, sid, outc, errc, res)
    except BaseException:
        outc.close()
        errc.close()
        end_session(sid, True)
        wipe_shared()
        raise
    finally:
        res.close()
    resp["_streams"] = (outc, errc)
    return resp


def run_cell_in_session(req, body, sid, outc, errc, res):
    expire_sessions()
    reset = False
    s = SESSIONS.get(sid)
    if s is None:
        reset = RESET_IDS.pop(sid, False) or bool(req.get("known"))
        s = start_session(sid, req)
    s["last"] = time.monotonic()
    stdin_path = write_stdin(body, s["uid"])
    freeze(s, False)
    oom_before = oom_count(s["leaf"])
    refused_before = pids_refusals(s["leaf"])
    cpu_before = cpu_ms_of(s["pid"])
    start = time.monotonic()
    result = {}
    try:
        write_all(s["ctl_w"], (json.dumps({"codeBytes": body.code_len, "stdinPath": stdin_path}) + "\n").encode())
        body.write_code(s["ctl_w"])
    except OSError:
        result["dead"] = True
    fds = [s["out_r"], s["err_r"], s["res_r"]]
    caps = [outc, errc, res]
    done = res.complete

    killed_for = None if result.get("dead") else pump(fds, caps, start + req["timeoutMs"] / 1000.0,
                                                       req["hardOutputBytes"], done, drain_s=0.0)
    refused = pids_refusals(s["leaf"]) > refused_before
    if not killed_for:
        drain_nonblocking([(s["out_r"], outc), (s["err_r"], errc)], req["hardOutputBytes"])
    cpu_ms = max(0.0, cpu_ms_of(s["pid"]) - cpu_before)
    wall_ms = (time.monotonic() - start) * 1000.0
    try:
        os.unlink(stdin_path)
    except OSError:
        pass
    rc = None
    if done() and not killed_for:
        # First stop the interpreter (all its threads): from here nothing of it can fork or write.
        freeze(s, True)
        rc = res.rc()
    if rc is not None:
        # The cell is over; children it left behind are not part of the session's state. They die
        # with new tasks blocked, so none can fork a replacement.
        leftovers = leaf_pids(s["leaf"]) - {s["pid"]}
        if leftovers:
            kill_tree(s["leaf"], None, keep={s["pid"]})  # leaves new tasks blocked in the leaf
            # Only the interpreter can reap them (zombies would hold task slots): let it run just for
            # that while the leaf still refuses new tasks, then stop it again before the limit returns.
            freeze(s, False)
            session_reap(s)
            freeze(s, True)
            leaf_prepare(s["leaf"], req["memoryMb"])
        reap_all()
        wipe_shared()
        return {"status": "ok" if rc == 0 else "runtime_error", "exitCode": rc, "signal": None,
                "wallMs": round(wall_ms, 3), "cpuMs": round(cpu_ms, 3),
                "stderrNotes": [task_limit_note()] if refused else [], "sessionReset": reset,
                "outputBytes": outc.total + errc.total}
    # Timeout, flood or a crashed interpreter: the state is gone; say so.
    st = None
    if not killed_for:
        try:
            p, st0 = os.waitpid(s["pid"], os.WNOHANG)
            st = st0 if p == s["pid"] else None
        except ChildProcessError:
            pass
    pid = s["pid"]
    end_session(sid, True)
    notes = []
    forged = done() and not killed_for
    if forged:
        notes.append("rstar-sandbox: the cell wrote something other than its result on the session's result "
                     "pipe; the session was reset\n")
    status, code, sig = classify(killed_for, st, oom_before, s["leaf"])
    if forged or (st is None and not killed_for and status == "ok"):
        status, code, sig = "killed", None, "SIGKILL"  # the sandbox ended it
    if refused:
        notes.append(task_limit_note())
    wipe_shared()
    return {"status": status, "exitCode": code, "signal": sig, "wallMs": round(wall_ms, 3),
            "cpuMs": round(cpu_ms, 3), "stderrNotes": notes, "sessionReset": True,
            "outputBytes": outc.total + errc.total, "pid": pid}


# ---------------------------------------------------------------- main loop
def handle(req, body):
    op = req.get("op", "exec")
    if op == "ping":
        return {"pong": True, "sessions": len(SESSIONS)}
    if op == "end_session":
        end_session(req["session"], False)
        return {"ended": True, "sessions": len(SESSIONS)}
    if req.get("session"):
        return exec_session(req, body)
    return exec_stateless(req, body)


PRIVATE_NAMESPACES = probe_namespaces()


def answer(req, body):
    """Handle one request and send its response; unmap the call's bytes. A function of its own: its
    frame (the request, the response) is gone before `main` forks the next spare child, which a program
    could otherwise walk up to with `sys._getframe().f_back`."""
    streams = ()
    try:
        try:
            resp = handle(req, body)
            streams = resp.pop("_streams", ())
        except Exception as e:  # a broken request must not kill the zygote
            resp = {"status": "sandbox_error", "stdout": "", "stderr": f"rstar-sandbox: {e!r}",
                    "exitCode": None, "signal": None, "wallMs": 0, "cpuMs": 0, "truncated": False,
                    "sessionReset": False}
        resp["sessions"] = len(SESSIONS)
        send(resp, streams)
    finally:
        for c in streams:
            c.close()
        if body is not NO_CALL_BYTES:
            body.close()


def main():
    global SPARE
    send({"ready": True, "pid": os.getpid(), "python": sys.version.split()[0],
          "numpy": numpy.__version__, "sympy": sympy.__version__, "scipy": scipy.__version__,
          "intMaxStrDigits": sys.get_int_max_str_digits(), "immortalized": IMMORTALIZED, "hugeRanges": HUGE_RANGES,
          "wipeKeep": WIPE_KEEP, "privateNamespaces": PRIVATE_NAMESPACES})
    while True:
        r, _, _ = select.select([PROTO_IN_FD], [], [], 1.0)
        if not r:
            expire_sessions()
            reap_all()
            continue
        request = read_request()
        if request is None:
            for sid in list(SESSIONS):
                end_session(sid, False)
            return
        answer(*request)
        request = None  # the spare forked below must not find this request in main's frame
        if WIPE_FAILED:
            # Something a call left could not be removed, so the next call could see it: this zygote
            # and its private tmpfs end here, and the pool starts a fresh one.
            sys.stderr.write(f"rstar-sandbox: a wipe failed {WIPE_FAILED[:1]!r}; this zygote exits "
                             "to be replaced\n")
            for sid in list(SESSIONS):
                end_session(sid, False)
            os._exit(3)
        if SPARE is None and CFG.get("prefork", True):
            try:
                SPARE = prefork()
            except OSError:
                # No fork or work dir now (task or space limits): the next call tries again inline
                # and reports what failed as its own `sandbox_error`, the zygote lives on.
                SPARE = None


if __name__ == "__main__":
    main()
    # No interpreter finalisation: it would try to tear down the immortalised heap (and it has
    # nothing to flush that `send` has not flushed already).
    os._exit(0)
