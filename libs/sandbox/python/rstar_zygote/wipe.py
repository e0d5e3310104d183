"""Removing what a call left: its work dir and everything in the shared temp dirs (/tmp, /var/tmp,
/dev/shm), so no file of one call is seen by the next.

A call's file names are call data: listing a directory makes each name a Python string, which in the
zygote would stay in freed memory that every later child inherits (a review found 2,183 of 3,000 names a
call created in the next call's memory). So every listing happens in a short-lived forked helper, and
only when a watched directory's stat says the call left something.
"""
import os
import re
import time

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path, failed):
    """Remove the directory `path` and everything in it: depth first, one directory fd at a time,
    every step relative to a directory fd (never follows a planted symlink, no path length limit)
    and without recursion (a program can nest directories deeper than Python's recursion limit;
    the standard library's rmtree raised RecursionError there). Runs only once the call's processes
    are dead. Appends what it could not remove to `failed`."""
    below = []  # names from `path` down to the directory `fd` is open on
    try:
        fd = os.open(path, DIR_FLAGS)
    except OSError:
        try:
            os.unlink(path)  # not a directory (or a symlink to one): the entry itself goes
        except FileNotFoundError:
            pass
        except OSError:
            failed.append(path)
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
        failed.append(path)
        return
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        failed.append(path)


def unescape_mountinfo(field):
    """/proc/self/mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def keep_map(wipe_dirs, work_root, mount_points):
    """What the shared-dir wipe must leave alone, fixed once at start: {path: "skip"} for mount points
    inside the wiped dirs (bwrap binds a Python install or checkout that lives under /tmp back on top of
    the private tmpfs) and for `work_root`, {path: "descend"} for the directories that lead to them.
    Why: wiping a read-only bind walked the whole install on every call (~100 ms of CPU per call for a
    venv under /tmp, measured), and would empty a writable one."""
    keep = {}
    roots = [os.path.abspath(d) for d in wipe_dirs]
    for target in [*mount_points, os.path.abspath(work_root)]:
        for root in roots:
            if not target.startswith(root + os.sep):
                continue
            keep[target] = "skip"
            parent = os.path.dirname(target)
            while parent != root and parent.startswith(root + os.sep):
                keep.setdefault(parent, "descend")
                parent = os.path.dirname(parent)
    return keep


def mount_points():
    try:
        with open("/proc/self/mountinfo") as f:
            return [unescape_mountinfo(line.split()[4]) for line in f]
    except OSError:
        return []


class Wiper:
    """The wipe's state: what to keep, which directories to watch, their stat after the last wipe, and
    what could not be removed (then the zygote ends after answering, and the pool starts a fresh one
    with a fresh tmpfs)."""

    def __init__(self, wipe_dirs, work_root):
        self.wipe_dirs = [os.path.abspath(d) for d in wipe_dirs]
        self.keep = keep_map(wipe_dirs, work_root, mount_points())
        # The directories a call can add entries to without `keep`'s protection: the shared temp dirs
        # and those leading to a kept mount point (all root-owned: a call cannot set their times).
        # Adding or removing an entry changes a directory's mtime and ctime and, on tmpfs, its size (20
        # bytes an entry), so the same stat as after the last wipe says, without listing anything, that
        # the call left nothing there. The size also covers an entry made within one timestamp tick of
        # the wipe (coarse before Linux 6.13).
        self.watch = self.wipe_dirs + [p for p, k in self.keep.items() if k == "descend"]
        self.failed = []
        self.stats = self.watched_stats()

    def watched_stats(self):
        out = []
        for d in self.watch:
            try:
                st = os.stat(d)
                out.append((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_nlink, st.st_ino))
            except OSError:
                out.append(None)
        return out

    def in_helper(self, fn, *args):
        """Run a wipe in a short-lived forked child (see the module doc). A child that cannot be forked,
        or whose wipe fails, marks the wipe failed."""
        try:
            pid = os.fork()
        except OSError:
            self.failed.append("(no process for the wipe)")
            return
        if pid == 0:
            try:
                failed = []
                fn(*args, failed)
                if failed:
                    # A count, not the names: they are the call's data.
                    os.write(2, f"rstar-sandbox: the wipe could not remove {len(failed)} entries\n".encode())
                    os._exit(3)
                os._exit(0)
            except BaseException:
                os._exit(4)
        try:
            _, st = os.waitpid(pid, 0)  # EINTR is retried by Python (PEP 475)
        except ChildProcessError:  # reaped elsewhere: cannot tell how it ended
            st = None
        if st is None or not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0):
            self.failed.append("(what the wipe reported above)")

    def workdir(self, path):
        """Remove a call's work dir."""
        try:
            os.rmdir(path)  # the common case: the program wrote no files (one syscall)
        except FileNotFoundError:
            pass
        except OSError:
            self.in_helper(remove_tree, path)

    def _tree(self, d, session_dirs, failed):
        """Remove everything in `d` except what `keep` protects and live sessions' dirs."""
        try:
            entries = os.listdir(d)
        except FileNotFoundError:
            return
        except OSError:
            failed.append(d)
            return
        for name in entries:
            p = os.path.join(d, name)
            kind = self.keep.get(p)
            if kind == "skip" or p in session_dirs:
                continue
            if kind == "descend" and os.path.isdir(p) and not os.path.islink(p):
                self._tree(p, session_dirs, failed)
                continue
            remove_tree(p, failed)

    def shared(self, session_dirs):
        """After every call: empty the shared temp dirs. Nothing to list when no watched directory
        changed (the common case); else the listing happens in a wipe helper."""
        if self.watched_stats() == self.stats:
            return
        self.in_helper(lambda failed: [self._tree(d, session_dirs, failed) for d in self.wipe_dirs])
        self.stats = self.watched_stats()


def new_workdir(work_root, uid):
    """A private work dir for one call or session, owned by `uid` (0700)."""
    d = os.path.join(work_root, f"c{time.monotonic_ns()}")
    os.mkdir(d, 0o700)
    if uid is not None:
        os.chown(d, uid, uid)
    return d
