"""Sessions (PROTOCOL's `jupyter_code` tool): one live interpreter per session id, forked from the
zygote on first use, running one cell per request with Jupyter's semantics (state persists, a final bare
expression is echoed). A cell that runs into its time limit is interrupted as Jupyter and IPython do
(KeyboardInterrupt) and the session keeps its namespace; the interpreter is killed and the session reset
only when the cell does not stop within a grace period, or stops leaving threads or child processes.

Between cells the interpreter is stopped (SIGSTOP, all threads), so a thread its cell left running can
neither act while other calls of this zygote run (they share /tmp) nor spy on them.
"""
import json
import os
import select
import signal
import time

from . import cell
from .callmem import cpu_ms_of, proc_stat_fields, write_all
from .capture import Capture, ResultLine, drain_nonblocking, pump
from .forksafety import forget_zygote_state
from .isolation import (CLONE_NEWIPC, CLONE_NEWNET, call_limits, drop_privileges, isolate_fds, join_cgroup,
                        new_namespaces, redirect_stdin)
from .stateless import write_stdin
from .status import classify, reap_all
from .wipe import new_workdir

FORGED_NOTE = ("rstar-sandbox: the cell wrote something other than its result on the session's result "
               "pipe; the session was reset\n")


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


class CellRunner:
    """The interpreter side of a session: runs each cell with SIGINT enabled only while the cell's own
    code runs (between cells it is ignored, so an interrupt that comes late cannot end the interpreter),
    keeping the handler the program installed from one cell to the next."""

    def __init__(self):
        self.handler = signal.default_int_handler
        self.budget = None

    def run(self, code, ns, echo):
        if self.budget is None:
            self.budget = cell.RecursionBudget()
            self.budget.install(cell.frame_depth() + 1)
        try:
            signal.signal(signal.SIGINT, self.handler)
            rc = cell.run_cell(code, ns, echo)
            try:
                cell.join_cell_threads()
            except KeyboardInterrupt as e:
                cell.print_exception(e)
                rc = rc or 1
        except KeyboardInterrupt:  # arrived between the program's end and the handler's reset
            rc = 1
        finally:
            self.handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        # A session cannot end by SIGINT and live on: an uncaught KeyboardInterrupt is exit code 1 here.
        return 1 if rc == cell.EXIT_BY_SIGINT else rc


def session_loop(ctl_r, res_w, workdir):
    """The session interpreter: one cell per control line (a JSON header, then `codeBytes` of program),
    result `rc N` on its own pipe (never in stdout, so no program output can forge the end marker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ns = cell.fresh_main()
    cell.as_script(workdir)
    cell.install_hooks()
    runner = CellRunner()
    me = os.getpid()
    ctl = os.fdopen(ctl_r, "rb")
    while True:
        line = ctl.readline()
        if not line:
            os._exit(0)
        header = json.loads(line)
        if header.get("reap"):
            # The zygote killed what the last cell left running; only their parent can reap them.
            os.write(res_w, f"reaped {reap_children(0.5)}\n".encode())
            continue
        code = ctl.read(header["codeBytes"]).decode("utf-8")
        redirect_stdin(header["stdinPath"])
        cell.build_std_streams()
        os.chdir(workdir)
        rc = runner.run(code, ns, bool(header.get("echo", True)))
        if os.getpid() != me:
            # A process the cell forked returned here (e.g. its code raised): it is not the session.
            os._exit(rc & 0xFF)
        os.write(res_w, f"rc {rc}\n".encode())


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


def end_session(z, sid, reset):
    s = z.sessions.pop(sid, None)
    if not s:
        return
    z.cg.kill_tree(s["leaf"], s["pid"])
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
    z.session_dirs.discard(s["workdir"])
    z.wiper.workdir(s["workdir"])
    if reset:
        z.mark_reset(sid)


def expire_sessions(z):
    now = time.monotonic()
    for sid in [k for k, s in z.sessions.items() if now - s["last"] > z.cfg.session_idle_s]:
        end_session(z, sid, True)


def free_slot(z):
    """The lowest session slot no live session holds (there are session_cap: the caller evicts first).
    A slot is a cgroup leaf (where cgroups exist) and a uid of its own (where uids can be dropped)."""
    used = {s["slot"] for s in z.sessions.values()}
    return next(k for k in range(z.cfg.session_cap) if k not in used)


def session_uid(z, slot):
    return z.cfg.session_uids[slot] if slot < len(z.cfg.session_uids) else z.cfg.call_uid


def task_states(pid):
    """The state letter of every thread of `pid`, or None when it is gone."""
    try:
        return [proc_stat_fields(f"/proc/{pid}/task/{t}/stat")[0] for t in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError, IndexError):
        return None


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
        states = task_states(pid)
        if states is None or all(st in (b"T", b"t", b"Z", b"X") for st in states):
            return
        time.sleep(0.0005)


def start_session(z, sid, req):
    cfg = z.cfg
    if len(z.sessions) >= cfg.session_cap:
        lru = min(z.sessions, key=lambda k: z.sessions[k]["last"])
        end_session(z, lru, True)
    slot = free_slot(z)
    leaf = cfg.cg_sessions[slot] if slot < len(cfg.cg_sessions) else None
    uid = session_uid(z, slot)
    z.cg.prepare(leaf, req["memoryMb"])
    workdir = new_workdir(cfg.work_root, uid)
    z.session_dirs.add(workdir)
    ctl_r, ctl_w = os.pipe()
    res_r, res_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    join_fds = z.cg.procs_fds(leaf)
    pid = os.fork()
    if pid == 0:
        try:
            join_cgroup(join_fds)
            new_namespaces(CLONE_NEWIPC | CLONE_NEWNET)
            ctl_r, res_w = isolate_fds(out_w, err_w, [ctl_r, res_w])
            forget_zygote_state(z)
            # Sessions get a generous CPU rlimit: their wall limit is enforced per cell from the zygote.
            drop_privileges(cfg, workdir, uid)
            call_limits(leaf, req["memoryMb"], 24 * 3600 * 1000)
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
    z.sessions[sid] = s
    return s


def exec_session(z, req, body):
    """Run one cell in the request's session (started on first use). Any failure of the zygote's own
    handling ends the session (reset), so nothing of it keeps running unwatched, and wipes what the
    cell left in the shared temp dirs."""
    sid = req["session"]
    outc, errc, res = Capture(req["outputChars"]), Capture(req["outputChars"]), ResultLine()
    try:
        resp = run_cell_in_session(z, req, body, sid, outc, errc, res)
    except BaseException:
        outc.close()
        errc.close()
        end_session(z, sid, True)
        z.wiper.shared(z.session_dirs)
        raise
    finally:
        res.close()
    resp["_streams"] = (outc, errc)
    return resp


def wait_exit(pid, wait_s):
    """The wait status of `pid` once it has exited (its pipes closed: it is exiting), waiting up to
    `wait_s`; None when it has not exited by then or was reaped elsewhere."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            p, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if p == pid:
            return st
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.002)


def run_cell_in_session(z, req, body, sid, outc, errc, res):
    cfg = z.cfg
    expire_sessions(z)
    reset = False
    s = z.sessions.get(sid)
    if s is None:
        reset = z.reset_ids.pop(sid, False) or bool(req.get("known"))
        s = start_session(z, sid, req)
    s["last"] = time.monotonic()
    stdin_path = write_stdin(z, body, s["uid"])
    freeze(s, False)
    oom_before = z.cg.oom_count(s["leaf"])
    refused_before = z.cg.pids_refusals(s["leaf"])
    cpu_before = cpu_ms_of(s["pid"])
    start = time.monotonic()
    dead = False
    try:
        header = {"codeBytes": body.code_len, "stdinPath": stdin_path, "echo": bool(req.get("echo", True))}
        write_all(s["ctl_w"], (json.dumps(header) + "\n").encode())
        body.write_code(s["ctl_w"])
    except OSError:
        dead = True
    fds = [s["out_r"], s["err_r"], s["res_r"]]
    caps = [outc, errc, res]
    done = res.complete
    hard = req["hardOutputBytes"]
    killed_for = None if dead else pump(fds, caps, start + req["timeoutMs"] / 1000.0, hard, done, drain_s=0.0)
    interrupted = False
    if killed_for == "timeout":
        # As Jupyter and IPython do: interrupt the cell (KeyboardInterrupt in its main thread) and give it
        # a grace period to stop; only a cell that does not stop in time costs the session its state.
        try:
            os.kill(s["pid"], signal.SIGINT)
            interrupted = True
        except OSError:
            pass
        if interrupted:
            killed_for = pump(fds, caps, time.monotonic() + cfg.interrupt_grace_s, hard, done, drain_s=0.0)
    refused = z.cg.pids_refusals(s["leaf"]) > refused_before
    if not killed_for:
        drain_nonblocking([(s["out_r"], outc), (s["err_r"], errc)], hard)
    cpu_ms = max(0.0, cpu_ms_of(s["pid"]) - cpu_before)
    wall_ms = (time.monotonic() - start) * 1000.0
    try:
        os.unlink(stdin_path)
    except OSError:
        pass
    rc = None
    forbidden = False
    if done() and not killed_for:
        # First stop the interpreter (all its threads): from here nothing of it can fork or write.
        freeze(s, True)
        rc = res.rc()
        if interrupted and rc is not None:
            # An interrupted cell may have stopped mid-way through work it started: a thread or process
            # it left running is state the next cell cannot trust.
            states = task_states(s["pid"])
            forbidden = states is None or len(states) > 1 or bool(z.cg.pids(s["leaf"]) - {s["pid"]})
    notes = [z.cg.task_limit_note()] if refused else []
    if rc is not None and not forbidden:
        # The cell is over; children it left behind are not part of the session's state. They die
        # with new tasks blocked, so none can fork a replacement.
        leftovers = z.cg.pids(s["leaf"]) - {s["pid"]}
        if leftovers:
            z.cg.kill_tree(s["leaf"], None, keep={s["pid"]})  # leaves new tasks blocked in the leaf
            # Only the interpreter can reap them (zombies would hold task slots): let it run just for
            # that while the leaf still refuses new tasks, then stop it again before the limit returns.
            freeze(s, False)
            session_reap(s)
            freeze(s, True)
            z.cg.prepare(s["leaf"], req["memoryMb"])
        reap_all()
        z.wiper.shared(z.session_dirs)
        if interrupted:
            status, code, sig = "timeout", None, "SIGINT"
        else:
            status, code, sig = ("ok" if rc == 0 else "runtime_error"), rc, None
        return {"status": status, "exitCode": code, "signal": sig, "wallMs": round(wall_ms, 3),
                "cpuMs": round(cpu_ms, 3), "stderrNotes": notes, "sessionReset": reset, "sessionKept": True,
                "outputBytes": outc.total + errc.total}
    # Timeout not stopped by the interrupt, forbidden state, flood or a crashed interpreter: the state
    # is gone; say so.
    st = None
    if not killed_for and not done():
        # Its pipes closed without a result: it is exiting (it may not be reaped yet on a loaded host).
        st = wait_exit(s["pid"], 2.0)
    pid = s["pid"]
    end_session(z, sid, True)
    forged = done() and rc is None and not killed_for
    if forged:
        notes.insert(0, FORGED_NOTE)
    if interrupted:
        status, code, sig = "timeout", None, "SIGKILL"
    else:
        status, code, sig = classify(killed_for, st, z.cg.oom_count(s["leaf"]) > oom_before)
        if forged or (st is None and not killed_for and status in ("ok", "runtime_error") and code is None and sig is None):
            status, code, sig = "killed", None, "SIGKILL"  # the sandbox ended it
    z.wiper.shared(z.session_dirs)
    return {"status": status, "exitCode": code, "signal": sig, "wallMs": round(wall_ms, 3),
            "cpuMs": round(cpu_ms, 3), "stderrNotes": notes, "sessionReset": True, "sessionKept": False,
            "outputBytes": outc.total + errc.total, "pid": pid}
