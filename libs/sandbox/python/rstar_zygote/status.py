"""How a program ended, as a status (docs/design/protocol.md §3), and the reaping that tells it."""
import os
import signal


def signal_name(n):
    """SIGSEGV, SIGRTMIN+1, ...: a real-time signal has no `signal.Signals` member, and which numbers
    are real-time depends on the C library (glibc reserves two, musl three), so it is named relative
    to this interpreter's SIGRTMIN/SIGRTMAX; anything else unnamed is `SIG<n>`. Never None."""
    try:
        return signal.Signals(n).name
    except ValueError:
        lo = getattr(signal, "SIGRTMIN", None)
        hi = getattr(signal, "SIGRTMAX", None)
        if lo is not None and hi is not None and lo < n <= hi:
            return f"SIGRTMIN+{n - lo}"
        return f"SIG{n}"


def ending(exit_status):
    """(exitCode, signal name) of a wait status; (None, None) when the status is unknown (None)."""
    if exit_status is None:
        return None, None
    if os.WIFSIGNALED(exit_status):
        return None, signal_name(os.WTERMSIG(exit_status))
    if os.WIFEXITED(exit_status):
        return os.WEXITSTATUS(exit_status), None
    return None, None


def classify(killed_for, exit_status, oom_killed):
    """Map how the child ended to (status, exitCode, signal). `killed_for` is the sandbox's reason for
    killing it ('timeout', 'output_limit') or None; `oom_killed` whether its cgroup counted an OOM kill
    during the call. A `runtime_error` whose stderr ends in a MemoryError line is made `memory_limit` by
    the host, which has the text (see callmem)."""
    code, sig = ending(exit_status)
    if killed_for:
        return killed_for, code, sig or "SIGKILL"
    if oom_killed:
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


def reap_all():
    """Reap every exited child (the zygote is a subreaper); returns {pid: status} for the ones reaped."""
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
