"""cgroup leaves of calls and sessions (v1 or v2): limits, counters and killing every task of a call.

A call's child joins its leaf (pids + memory) *before* it drops to an unprivileged uid, so user code can
neither leave its cgroup nor signal the zygote; a cgroup OOM kill is the clean signal for
`memory_limit` (RLIMIT_AS is only the fallback where no cgroup is writable).
"""
import os
import signal
import time

from .status import reap_all


def cg_write(d, name, value):
    with open(os.path.join(d, name), "w") as f:
        f.write(str(value))


class Cgroups:
    """The zygote's open cgroup files. Counters' fds stay open and are re-read from offset 0 (cgroupfs
    regenerates their text on each read at 0): opening a kernfs file costs more than reading it. Every
    fd is O_CLOEXEC and closed in children by isolation.isolate_fds."""

    def __init__(self, pids_max):
        self.pids_max = pids_max
        self.read_fds = {}  # path -> open fd
        self.procs_fds_by_path = {}  # cgroup.procs path -> fd the zygote keeps open for its children

    def read(self, d, name):
        """Current text of a cgroup file. Not cgroup.procs through the cache: v1 caches its pid list per
        open file, so it is opened afresh each time."""
        path = os.path.join(d, name)
        if name == "cgroup.procs":
            try:
                with open(path) as f:
                    return f.read()
            except OSError:
                return ""
        fd = self.read_fds.get(path)
        try:
            if fd is None:
                fd = self.read_fds[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            return os.pread(fd, 65536, 0).decode()  # counter files are a few lines
        except OSError:
            # Removed under us: forget the fd (the next read opens the path again).
            self.read_fds.pop(path, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
            return ""

    def oom_count(self, leaf):
        if not leaf or not leaf.get("memory"):
            return 0
        d = leaf["memory"]
        text = self.read(d, "memory.oom_control") if leaf.get("version") == 1 else self.read(d, "memory.events")
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def pids_refusals(self, leaf):
        """How often the leaf's pids controller has refused a fork/clone/thread (`max` in pids.events,
        same line in v1 and v2); cumulative, so a call compares its value before and after."""
        if not leaf or not leaf.get("pids"):
            return 0
        for line in self.read(leaf["pids"], "pids.events").splitlines():
            k, _, v = line.partition(" ")
            if k == "max":
                return int(v)
        return 0

    def task_limit_note(self):
        """The fixed line appended to stderr when a call reached its task limit (README: the outcome of
        process-count exhaustion), so the reason for the program's EAGAIN is never hidden. Fixed text,
        no counts: the result of a call must not depend on timing."""
        return (f"rstar-sandbox: task limit reached: a call may run at most {self.pids_max} tasks (processes, "
                "threads and unreaped zombies together); creating more failed with EAGAIN\n")

    def prepare(self, leaf, memory_mb):
        """Set the leaf's limits for the next call (memory in MiB of new pages, pids incl. threads)."""
        if not leaf:
            return
        key = (self.pids_max, int(memory_mb))
        if leaf.get("_applied") == key:
            return  # limits unchanged since the last call in this leaf: skip the cgroupfs writes
        leaf["_applied"] = key
        if leaf.get("pids"):
            cg_write(leaf["pids"], "pids.max", self.pids_max)
        if leaf.get("memory"):
            b = int(memory_mb) << 20
            if leaf.get("version") == 1:
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

    def pids(self, leaf):
        """Pids of every task in the leaf now."""
        out = set()
        if leaf:
            for key in ("pids", "memory"):
                d = leaf.get(key)
                if d:
                    for line in self.read(d, "cgroup.procs").split():
                        out.add(int(line))
        return out

    def kill_tree(self, leaf, pgid=None, keep=frozenset()):
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
            pids = self.pids(leaf) - keep
            if not pids or time.monotonic() > deadline:
                break
            if not blocked and leaf.get("pids"):
                # A fork bomb refills every slot a kill frees: forbid new tasks first, so the kill loop
                # converges. prepare() restores the limit before the leaf's next call.
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

    def procs_fds(self, leaf):
        """Parent side, before a fork: open (once) the leaf's cgroup.procs files, so the child joins
        with one write each instead of an open, a write and a close."""
        fds = []
        if leaf:
            for key in ("pids", "memory"):
                if leaf.get(key):
                    path = leaf[key] + "/cgroup.procs"
                    if path not in self.procs_fds_by_path:
                        self.procs_fds_by_path[path] = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
                    fds.append(self.procs_fds_by_path[path])
        return fds
