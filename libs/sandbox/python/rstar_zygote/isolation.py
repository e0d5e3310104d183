"""What a freshly forked child does before any user code runs: join its cgroup, private namespaces,
its own fds only, rlimits, an unprivileged uid (in that order: see each function)."""
import ctypes
import fcntl
import functools
import os
import resource
import signal
import struct

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000


@functools.cache
def libc():
    return ctypes.CDLL(None, use_errno=True)


def become_subreaper():
    """Orphans of a call (daemonised, new-session children) are re-parented to the zygote, reaped
    there and never become zombies."""
    libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def new_namespaces(flags):
    """Child side, as root: private namespaces for what outlives a process. IPC (System V shared
    memory, message queues, semaphores and POSIX message queues persist after their creator exits:
    without this a call could leave data, or pinned memory, for the next one); for a session also the
    network (its sockets stay bound while it is stopped between cells: others could connect to them),
    with its own loopback up. False where unshare is not permitted (no CAP_SYS_ADMIN)."""
    if libc().unshare(flags) != 0:
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
    """Child side, first thing after the fork: move into the call's leaf (fds from Cgroups.procs_fds).
    Raw fd writes: every Python object a fresh child touches costs it a copy-on-write page fault."""
    for fd in fds:
        os.write(fd, b"0")  # "0": the writing process itself
    os.setpgid(0, 0)


def isolate_fds(out_w, err_w, keep):
    """Child: stdout/stderr onto the pipes, `keep` fds moved to 3.., every other inherited fd closed
    (so a program can never reach the protocol channel, a cgroup file or another session's pipes)."""
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


def drop_privileges(cfg, workdir, uid):
    """In a fresh child (the cgroup was joined right after fork): the limits every call shares, then
    leave root for `uid` (None: no privilege to drop), in `workdir`."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg.file_max, cfg.file_max))
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg.nofile, cfg.nofile))
    os.chdir(workdir)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    # Die with the zygote whatever happens to it (after the uid change, which clears this setting).
    libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
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


def redirect_stdin(path):
    """Point fd 0 at `path` (nothing has read from it yet)."""
    fd = os.open(path, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
