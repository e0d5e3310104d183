"""The zygote process: `python -m rstar_zygote` (started by libs/sandbox/src/zygote.worker.ts).

Startup: read the configuration, prepare the heap every child inherits, take the protocol fds private,
then serve requests one at a time until the pool closes fd 0. Why the pieces are shaped this way:
- the wall-clock limit is enforced here, outside the child, by SIGKILL of every process in the leaf (and
  the process group); the host adds a second, coarser backstop on the zygote itself;
- stdout/stderr are read while the program runs under the output caps (capture);
- the zygote is a child subreaper, so orphans of a call are reaped here and never become zombies;
- what each fork relies on is in forksafety.
"""
import os
import select
import sys

from . import frames, sessions, stateless
from .callmem import NO_CALL_BYTES
from .config import config_from_env
from .isolation import become_subreaper, probe_namespaces
from .state import Zygote
from .warmup import prepare_heap


def handle(z, req, body):
    op = req.get("op", "exec")
    if op == "ping":
        return {"pong": True, "sessions": len(z.sessions)}
    if op == "end_session":
        sessions.end_session(z, req["session"], False)
        return {"ended": True, "sessions": len(z.sessions)}
    if req.get("session"):
        return sessions.exec_session(z, req, body)
    return stateless.exec_stateless(z, req, body)


def answer(z, req, body):
    """Handle one request and send its response; unmap the call's bytes. A function of its own: its
    frame (the request, the response) is gone before `serve` forks the next spare child, which a program
    could otherwise walk up to with `sys._getframe().f_back` (forksafety 2)."""
    streams = ()
    try:
        try:
            resp = handle(z, req, body)
            streams = resp.pop("_streams", ())
        except Exception as e:  # a broken request must not kill the zygote
            resp = {"status": "sandbox_error", "stdout": "", "stderr": f"rstar-sandbox: {e!r}",
                    "exitCode": None, "signal": None, "wallMs": 0, "cpuMs": 0, "truncated": False,
                    "sessionReset": False}
        resp["sessions"] = len(z.sessions)
        frames.send(z.proto_out, resp, streams)
    finally:
        for c in streams:
            c.close()
        if body is not NO_CALL_BYTES:
            body.close()


def end_all_sessions(z):
    for sid in list(z.sessions):
        sessions.end_session(z, sid, False)


def serve(z):
    """The request loop; returns when the pool closes the protocol channel."""
    frames.send(z.proto_out, {"ready": True, "pid": os.getpid(), **z.facts})
    while True:
        r, _, _ = select.select([z.proto_in], [], [], 1.0)
        if not r:
            sessions.expire_sessions(z)
            stateless.reap_all()
            continue
        request = frames.read_request(z.proto_in)
        if request is None:
            end_all_sessions(z)
            return
        answer(z, *request)
        request = None  # the spare forked below must not find this request in this frame
        if z.wiper.failed:
            # Something a call left could not be removed, so the next call could see it: this zygote
            # and its private tmpfs end here, and the pool starts a fresh one.
            sys.stderr.write(f"rstar-sandbox: a wipe failed {z.wiper.failed[:1]!r}; this zygote exits "
                             "to be replaced\n")
            end_all_sessions(z)
            os._exit(3)
        if z.spare is None and z.cfg.prefork:
            try:
                z.spare = stateless.prefork(z)
            except OSError:
                # No fork or work dir now (task or space limits): the next call tries again inline
                # and reports what failed as its own `sandbox_error`, the zygote lives on.
                z.spare = None


def main():
    cfg = config_from_env(os.environ)
    heap = prepare_heap(cfg)
    become_subreaper()
    # Keep the protocol channel private: fd 1/2 of children are their own pipes.
    proto_out = os.dup(1)
    proto_in = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.makedirs(cfg.work_root, exist_ok=True)
    # Traversable, not listable: a call finds no other call's work dir or stdin file by name.
    os.chmod(cfg.work_root, 0o711)
    z = Zygote(cfg, proto_in, proto_out)
    import numpy
    import scipy
    import sympy
    z.facts = {"python": sys.version.split()[0], "numpy": numpy.__version__, "sympy": sympy.__version__,
               "scipy": scipy.__version__, "intMaxStrDigits": sys.get_int_max_str_digits(), **heap,
               "wipeKeep": z.wiper.keep, "privateNamespaces": probe_namespaces()}
    serve(z)


if __name__ == "__main__":
    main()
    # No interpreter finalisation: it would try to tear down the immortalised heap (and it has
    # nothing to flush that `send` has not flushed already).
    os._exit(0)
