"""One stateless call: a child forked ahead of time (the spare) gets the program and runs it as
`python3 prog.py` would; the zygote enforces the wall-clock limit from outside (SIGKILL of the whole
leaf), reads the output under its caps and classifies the ending."""
import json
import os
import signal
import sys
import time

from . import cell
from .callmem import write_all
from .capture import Capture, drain_nonblocking, pump
from .forksafety import forget_zygote_state
from .isolation import (CLONE_NEWIPC, call_limits, drop_privileges, isolate_fds, join_cgroup, new_namespaces,
                        redirect_stdin)
from .status import classify, reap_all
from .wipe import new_workdir


def own_children():
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as f:
            return {int(p) for p in f.read().split()}
    except OSError:
        return set()


def reap_strays(z, timeout_s=2.0):
    """Wait until every child except live sessions is reaped: processes a call left behind are
    re-parented to the zygote (subreaper) and must not linger as zombies after the call returns."""
    deadline = time.monotonic() + timeout_s
    while True:
        reap_all()
        keep = {s["pid"] for s in z.sessions.values()}
        if not (own_children() - keep) or time.monotonic() > deadline:
            return
        time.sleep(0.002)


def read_job(fd):
    """The spare child's wait: the job the zygote writes on `fd` (then closes): (header, program text),
    or None at EOF with nothing (the zygote is shutting down). The header is a JSON line, the program's
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


def run_job(code, ns, echo):
    """Child: run the program at top level as a script and end the process as CPython would."""
    cell.RecursionBudget().install(cell.frame_depth() + 1)
    rc = cell.run_cell(code, ns, echo)
    if rc == cell.EXIT_BY_SIGINT:
        cell.finish_script(0, ns)  # exit handlers still run; the process then dies by SIGINT
        cell.exit_process(rc)
    cell.exit_process(cell.finish_script(rc, ns))


def prefork(z):
    """Fork the next call's child now, with its own work dir: it joins the call leaf, sets up stdio and a
    fresh `__main__`, and blocks until it gets its request. All of that is off the next call's latency
    path; what depends on the request (stdin, dropping root for the call uid, CPU and memory limits)
    comes after."""
    cfg = z.cfg
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    go_r, go_w = os.pipe()
    workdir = None
    try:
        join_fds = z.cg.procs_fds(cfg.cg_call)
        workdir = new_workdir(cfg.work_root, cfg.call_uid)
        pid = os.fork()
    except OSError:
        for fd in (out_r, out_w, err_r, err_w, go_r, go_w):
            os.close(fd)
        if workdir:
            z.wiper.workdir(workdir)
        raise
    if pid == 0:
        try:
            join_cgroup(join_fds)
            new_namespaces(CLONE_NEWIPC)
            (go,) = isolate_fds(out_w, err_w, [go_r])
            forget_zygote_state(z)
            redirect_stdin(os.devnull)
            cell.build_std_streams()
            ns = cell.fresh_main()
            job = read_job(go)
            if job is None:
                os._exit(0)
            limits, code = job
            if limits["stdin"] != os.devnull:
                redirect_stdin(limits["stdin"])  # as root: the file is 0600, no call uid can read it
            # Root until the job is here: a waiting spare must not be a process of the call uid.
            drop_privileges(cfg, workdir, cfg.call_uid)
            call_limits(cfg.cg_call, limits["memoryMb"], limits["timeoutMs"])
            cell.as_script(workdir)
            cell.install_hooks()
            echo = bool(limits.get("echo", True))
        except BaseException as e:  # setup failure: report it as the sandbox's error
            try:
                os.write(2, f"rstar-sandbox: child setup failed: {e!r}\n".encode())
            finally:
                os._exit(125)
        run_job(code, ns, echo)
    os.close(out_w)
    os.close(err_w)
    os.close(go_r)
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # Linux < 5.3 or no pidfd in this build: poll instead
        pidfd = None
    return {"pid": pid, "out_r": out_r, "err_r": err_r, "go_w": go_w, "pidfd": pidfd, "workdir": workdir}


def write_stdin(z, body, uid):
    """The call's stdin (from its CallBytes) as a file in the work root, readable only by `uid` (None:
    root, for a child that opens it before dropping privileges). Returns its path."""
    path = os.path.join(z.cfg.work_root, f"stdin-{time.monotonic_ns()}")
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


def discard_spare(z, spare):
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
    z.cg.kill_tree(z.cfg.cg_call, spare["pid"])
    try:
        os.waitpid(spare["pid"], 0)
    except ChildProcessError:
        pass
    reap_strays(z)
    z.wiper.workdir(spare["workdir"])
    z.wiper.shared(z.session_dirs)


def exec_stateless(z, req, body):
    """Run one stateless call; the response dict, its output Captures under "_streams"."""
    timeout_s = req["timeoutMs"] / 1000.0
    leaf = z.cfg.cg_call
    z.cg.prepare(leaf, req["memoryMb"])
    oom_before = z.cg.oom_count(leaf)
    refused_before = z.cg.pids_refusals(leaf)
    # Before the spare is taken: a failure here leaves the spare ready for the next call.
    stdin_path = write_stdin(z, body, None) if body.input_len else None
    try:
        spare = z.spare or prefork(z)
        z.spare = None
        try:
            return run_spare(z, req, body, spare, stdin_path, oom_before, refused_before, timeout_s)
        except BaseException:
            discard_spare(z, spare)
            raise
    finally:
        if stdin_path:
            try:
                os.unlink(stdin_path)
            except OSError:
                pass


def run_spare(z, req, body, spare, stdin_path, oom_before, refused_before, timeout_s):
    """Give the spare child its job, collect its output and ending (exec_stateless's main part); the
    output mappings are the response's on success, unmapped here on failure."""
    outc, errc = Capture(req["outputChars"]), Capture(req["outputChars"])
    try:
        return collect_spare(z, req, body, spare, stdin_path, oom_before, refused_before, timeout_s, outc, errc)
    except BaseException:
        outc.close()
        errc.close()
        raise


def collect_spare(z, req, body, spare, stdin_path, oom_before, refused_before, timeout_s, outc, errc):
    leaf = z.cfg.cg_call
    pid, out_r, err_r, workdir = spare["pid"], spare["out_r"], spare["err_r"], spare["workdir"]
    start = time.monotonic()
    try:
        limits = {"memoryMb": req["memoryMb"], "timeoutMs": req["timeoutMs"], "stdin": stdin_path or os.devnull,
                  "echo": bool(req.get("echo", True))}
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
    refused = z.cg.pids_refusals(leaf) > refused_before
    if killed_for or not exited():
        # Either the program overran, or it closed its pipes but keeps running: the call is over.
        z.cg.kill_tree(leaf, pid)
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
    z.cg.kill_tree(leaf, pid)
    # A last non-blocking drain: output written just before the end is kept.
    drain_nonblocking([(out_r, outc), (err_r, errc)], req["hardOutputBytes"])
    os.close(spare.pop("out_r"))
    os.close(spare.pop("err_r"))
    reap_strays(z)
    ru = status_holder.get("ru")
    cpu_ms = (ru.ru_utime + ru.ru_stime) * 1000.0 if ru else 0.0
    st = status_holder.get("st")
    status, code, sig = classify(killed_for, st, z.cg.oom_count(leaf) > oom_before)
    if st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 125 and errc.head_has(b"rstar-sandbox: child setup failed"):
        status = "sandbox_error"
    z.wiper.workdir(workdir)
    z.wiper.shared(z.session_dirs)
    return {"status": status, "exitCode": code, "signal": sig, "wallMs": round(wall_ms, 3),
            "cpuMs": round(cpu_ms, 3), "stderrNotes": [z.cg.task_limit_note()] if refused else [],
            "sessionReset": False, "outputBytes": outc.total + errc.total, "_streams": (outc, errc)}
